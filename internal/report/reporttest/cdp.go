package reporttest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
)

// cdpConn is a minimal client of the Chrome DevTools Protocol over one
// websocket to the browser: commands are sent with an id and answered by a
// message with that id; everything else is an event, handed to onEvent from
// the reading goroutine. Pages are driven through flattened sessions
// (Target.attachToTarget with flatten), so one connection is enough.
type cdpConn struct {
	ws      *websocket.Conn
	onEvent func(method, session string, params json.RawMessage)
	nextID  atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan cdpMessage
	err     error // why reading stopped; set before done is closed

	cancel context.CancelFunc
	done   chan struct{}
}

type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *cdpError       `json:"error,omitempty"`
}

type cdpError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    string `json:"data,omitempty"`
}

func (e *cdpError) Error() string {
	if e.Data != "" {
		return fmt.Sprintf("%s (%d): %s", e.Message, e.Code, e.Data)
	}
	return fmt.Sprintf("%s (%d)", e.Message, e.Code)
}

// dialCDP connects to a browser's DevTools websocket.
func dialCDP(ctx context.Context, url string, onEvent func(method, session string, params json.RawMessage)) (*cdpConn, error) {
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to DevTools at %s: %w", url, err)
	}
	ws.SetReadLimit(256 << 20) // a full-page screenshot arrives as one message
	rctx, cancel := context.WithCancel(context.Background())
	c := &cdpConn{ws: ws, onEvent: onEvent, pending: map[int64]chan cdpMessage{}, cancel: cancel, done: make(chan struct{})}
	go c.read(rctx)
	return c, nil
}

func (c *cdpConn) read(ctx context.Context) {
	defer close(c.done)
	for {
		_, b, err := c.ws.Read(ctx)
		if err != nil {
			c.mu.Lock()
			c.err = err
			for id, ch := range c.pending {
				close(ch)
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
		var m cdpMessage
		if err := json.Unmarshal(b, &m); err != nil {
			continue // not a protocol message: nothing waits for it
		}
		if m.ID == 0 {
			if c.onEvent != nil && m.Method != "" {
				c.onEvent(m.Method, m.SessionID, m.Params)
			}
			continue
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// call sends one command (to the page of session, or to the browser when
// session is empty) and decodes its result into result, if not nil.
func (c *cdpConn) call(ctx context.Context, session, method string, params, result any) error {
	id := c.nextID.Add(1)
	req := struct {
		ID        int64  `json:"id"`
		Method    string `json:"method"`
		Params    any    `json:"params,omitempty"`
		SessionID string `json:"sessionId,omitempty"`
	}{id, method, params, session}
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	ch := make(chan cdpMessage, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("%s: connection closed: %w", method, err)
	}
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
		c.forget(id)
		return fmt.Errorf("%s: send: %w", method, err)
	}
	select {
	case <-ctx.Done():
		c.forget(id)
		return fmt.Errorf("%s: %w", method, ctx.Err())
	case m, ok := <-ch:
		if !ok {
			c.mu.Lock()
			err := c.err
			c.mu.Unlock()
			return fmt.Errorf("%s: connection closed: %w", method, err)
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %w", method, m.Error)
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				return fmt.Errorf("%s: decode result: %w", method, err)
			}
		}
		return nil
	}
}

func (c *cdpConn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// close drops the connection and waits for the reading goroutine to end.
func (c *cdpConn) close() {
	c.cancel()
	_ = c.ws.CloseNow()
	<-c.done
}
