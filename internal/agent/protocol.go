package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/load"
)

// Protocol is the version of the messages below. A coordinator and an agent
// of different dbrig versions refuse each other anyway; this number says,
// in the refusal, whether the difference is in the protocol too. Version 2
// added a workload's Extra to the result, version 3 the link an agent runs
// in front of its users and what it carried.
const Protocol = 3

// Message types. The coordinator sends hello, ping, load, start, stop, op
// and bye; the agent sends hello, pong, ready, started, interval, result,
// reply and error.
const (
	TypeHello    = "hello"
	TypePing     = "ping"
	TypePong     = "pong"
	TypeLoad     = "load"
	TypeReady    = "ready"
	TypeStart    = "start"
	TypeStarted  = "started"
	TypeInterval = "interval"
	TypeResult   = "result"
	TypeStop     = "stop"
	TypeOp       = "op"
	TypeReply    = "reply"
	TypeError    = "error"
	TypeBye      = "bye"
)

// Message is one line of JSON on the control channel (the agent's standard
// input and output, under ssh or over a TCP connection). Only the field of
// its type is set.
type Message struct {
	Type     string         `json:"t"`
	ID       int64          `json:"id,omitempty"`
	Hello    *Hello         `json:"hello,omitempty"`
	Clock    *Clock         `json:"clock,omitempty"`
	Load     *LoadJob       `json:"load,omitempty"`
	Start    *Start         `json:"start,omitempty"`
	Interval *load.Interval `json:"interval,omitempty"`
	Result   *load.Result   `json:"result,omitempty"`
	Extra    *Extra         `json:"extra,omitempty"` // with a result: what the workload measured beyond it
	Link     *link.Stats    `json:"link,omitempty"`  // with a result: what the agent's link carried
	Op       *Op            `json:"op,omitempty"`
	Reply    *Reply         `json:"reply,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// Hello is what each side says first.
type Hello struct {
	Version  string `json:"version"`
	Protocol int    `json:"protocol"`
	Host     string `json:"host,omitempty"`
	PID      int    `json:"pid,omitempty"`
	CPUs     int    `json:"cpus,omitempty"`
	// Address is the agent's own address as the coordinator reached it
	// (ssh's SSH_CONNECTION, or the TCP connection's local address): where
	// the servers it runs are exposed to other hosts.
	Address string `json:"address,omitempty"`
	// Index is an agent's share when it was started with one (a
	// Kubernetes Indexed Job's JOB_COMPLETION_INDEX), else -1.
	Index int `json:"index"`
	// Token authenticates an agent that dialled the coordinator over TCP.
	Token string `json:"token,omitempty"`
}

// Clock is a ping and its pong: the coordinator's send time and the agent's
// clock when it answered (Unix nanoseconds), to measure the offset.
type Clock struct {
	Seq   int64 `json:"seq"`
	Sent  int64 `json:"sent"`
	Agent int64 `json:"agent,omitempty"`
}

// LoadJob is one agent's share of a load.
type LoadJob struct {
	// Workload names a load workload the agent knows ("oltp"), Params its
	// parameters, in the workload's own form.
	Workload string          `json:"workload"`
	Params   json.RawMessage `json:"params"`
	// Login is the server's login; it travels only over the control
	// channel (ssh's encrypted session).
	Login  engine.Sealed `json:"login"`
	Config JobConfig     `json:"config"`
	// Index is this agent's share, of Agents.
	Index  int `json:"index"`
	Agents int `json:"agents"`
	// Link is the emulated link the agent runs in front of its users (nil:
	// they reach the server directly).
	Link *JobLink `json:"link,omitempty"`
}

// JobConfig is the serializable part of a load.Config.
type JobConfig struct {
	Users         int           `json:"users"`
	Think         load.Think    `json:"think"`
	Keying        time.Duration `json:"keying_ns,omitempty"`
	RampUp        time.Duration `json:"ramp_up_ns,omitempty"`
	Rate          float64       `json:"rate,omitempty"`
	Arrival       load.Arrival  `json:"arrival,omitempty"`
	MaxInFlight   int           `json:"max_in_flight,omitempty"`
	LateAfter     time.Duration `json:"late_after_ns,omitempty"`
	WarmUp        time.Duration `json:"warm_up_ns"`
	Duration      time.Duration `json:"duration_ns"`
	Grace         time.Duration `json:"grace_ns,omitempty"`
	TxLimit       time.Duration `json:"tx_limit_ns,omitempty"`
	Seed          uint64        `json:"seed"`
	ArrivalOffset time.Duration `json:"arrival_offset_ns,omitempty"`
	KeepSamples   bool          `json:"keep_samples,omitempty"`
}

func jobConfig(c load.Config) JobConfig {
	return JobConfig{Users: c.Users, Think: c.Think, Keying: c.Keying, RampUp: c.RampUp, Rate: c.Rate, Arrival: c.Arrival,
		MaxInFlight: c.MaxInFlight, LateAfter: c.LateAfter, WarmUp: c.WarmUp, Duration: c.Duration, Grace: c.Grace,
		TxLimit: c.TxLimit, Seed: c.Seed, ArrivalOffset: c.ArrivalOffset, KeepSamples: c.KeepSamples}
}

func (j JobConfig) loadConfig() load.Config {
	return load.Config{Users: j.Users, Think: j.Think, Keying: j.Keying, RampUp: j.RampUp, Rate: j.Rate, Arrival: j.Arrival,
		MaxInFlight: j.MaxInFlight, LateAfter: j.LateAfter, WarmUp: j.WarmUp, Duration: j.Duration, Grace: j.Grace,
		TxLimit: j.TxLimit, Seed: j.Seed, ArrivalOffset: j.ArrivalOffset, KeepSamples: j.KeepSamples,
		IntervalHistograms: true}
}

// Start is the common start instant in the agent's own clock (Unix ns).
type Start struct {
	At int64 `json:"at"`
}

// Op is a request about a site's instances; the agent answers with a Reply
// of the same ID.
type Op struct {
	Name     string                `json:"name"` // start, create_db, drop_db, exec, setting, reconfigure, stop
	Instance string                `json:"instance"`
	Config   engine.InstanceConfig `json:"config,omitzero"`
	Database string                `json:"database,omitempty"`
	SQL      []string              `json:"sql,omitempty"`
	Setting  string                `json:"setting,omitempty"`
	Settings map[string]string     `json:"settings,omitempty"`
	Keep     bool                  `json:"keep,omitempty"`
}

// Reply answers an Op.
type Reply struct {
	Error     string         `json:"error,omitempty"`
	Value     string         `json:"value,omitempty"`
	Restarted bool           `json:"restarted,omitempty"`
	Started   *StartedServer `json:"started,omitempty"`
}

// StartedServer is what the coordinator learns of an instance an agent
// started: its version and the addresses at which other hosts reach it.
type StartedServer struct {
	Version string        `json:"version"`
	Login   engine.Sealed `json:"login"`
	// Monitor is the monitoring login when the engine has one (ok false
	// otherwise).
	Monitor   engine.Sealed `json:"monitor"`
	MonitorOK bool          `json:"monitor_ok"`
	LogPath   string        `json:"log_path"`
}

// channel reads and writes messages on one control connection and counts
// the bytes each way, by message type.
type channel struct {
	r   *bufio.Reader
	wmu sync.Mutex
	w   io.Writer

	bytesIn, bytesOut atomic.Int64
	mu                sync.Mutex
	inByType          map[string]int64
	outByType         map[string]int64
}

func newChannel(r io.Reader, w io.Writer) *channel {
	return &channel{r: bufio.NewReaderSize(r, 64<<10), w: w, inByType: map[string]int64{}, outByType: map[string]int64{}}
}

// maxLine bounds one message (a result with every type's distribution is a
// few hundred kilobytes; kept samples more).
const maxLine = 256 << 20

// read returns the next message; io.EOF when the other side closed.
func (c *channel) read() (Message, error) {
	var line []byte
	for {
		chunk, err := c.r.ReadSlice('\n')
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			if len(line) > maxLine {
				return Message{}, fmt.Errorf("a message longer than %d bytes", maxLine)
			}
			continue
		}
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return Message{}, err
		}
		break
	}
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		return Message{}, fmt.Errorf("a message that is not dbrig's (%.60q): %w", line, err)
	}
	c.bytesIn.Add(int64(len(line)))
	c.mu.Lock()
	c.inByType[m.Type] += int64(len(line))
	c.mu.Unlock()
	return m, nil
}

// write sends one message; it is safe for concurrent use.
func (c *channel) write(m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s message: %w", m.Type, err)
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(b); err != nil {
		return err
	}
	c.bytesOut.Add(int64(len(b)))
	c.mu.Lock()
	c.outByType[m.Type] += int64(len(b))
	c.mu.Unlock()
	return nil
}

// Traffic is what a control channel carried, in bytes of JSON lines.
type Traffic struct {
	In, Out             int64
	InByType, OutByType map[string]int64
}

func (c *channel) traffic() Traffic {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := Traffic{In: c.bytesIn.Load(), Out: c.bytesOut.Load(), InByType: map[string]int64{}, OutByType: map[string]int64{}}
	for k, v := range c.inByType {
		t.InByType[k] = v
	}
	for k, v := range c.outByType {
		t.OutByType[k] = v
	}
	return t
}

// VersionError is a coordinator and an agent of different builds.
type VersionError struct {
	Host               string
	Agent, Coordinator Hello
}

func (e *VersionError) Error() string {
	proto := ""
	if e.Agent.Protocol != e.Coordinator.Protocol {
		proto = fmt.Sprintf(" (control protocol %d, the coordinator's %d)", e.Agent.Protocol, e.Coordinator.Protocol)
	}
	return fmt.Sprintf("the agent on %s runs dbrig %s, the coordinator dbrig %s%s: every agent must run the same build (--install copies this one to the hosts)",
		e.Host, e.Agent.Version, e.Coordinator.Version, proto)
}

// ErrLost says a control connection ended before its work was done.
var ErrLost = errors.New("the agent's connection was lost")
