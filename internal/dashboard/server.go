package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
)

//go:embed assets
var assets embed.FS

// subscriberBuffer is the events a page may fall behind by before it
// loses the oldest: minutes of a load's seconds.
const subscriberBuffer = 1024

// Server serves one run's page, its events and its run directory.
type Server struct {
	feed   *study.Feed
	redact func(string) string
	ln     net.Listener
	http   *http.Server
	served chan error
	// closing ends the event streams, which Shutdown would wait for.
	closing   chan struct{}
	closeOnce sync.Once

	mu  sync.Mutex
	dir string
}

// Start listens on addr (HOST:PORT) and serves the feed's run until
// Close. redact is applied to every string of every event (nil: none).
func Start(addr string, feed *study.Feed, redact func(string) string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if redact == nil {
		redact = func(s string) string { return s }
	}
	s := &Server{feed: feed, redact: redact, ln: ln, served: make(chan error, 1), closing: make(chan struct{})}
	page, _ := fs.Sub(assets, "assets")
	files := secure(http.FileServerFS(page))
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", files)
	mux.Handle("GET /dashboard.js", files)
	mux.Handle("GET /dashboard.css", files)
	mux.Handle("GET /echarts.min.js", secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		_, _ = w.Write([]byte(report.EchartsScript()))
	})))
	mux.HandleFunc("GET /events", s.events)
	// The report inlines its scripts: the page's policy is not for it.
	mux.HandleFunc("GET /run/{name}", s.runFile)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { s.served <- s.http.Serve(ln) }()
	return s, nil
}

// secure keeps the page to its own server: no script or request to
// anywhere else, and no framing by another site (echarts sets inline
// styles).
func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}

// URL is the page's address.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/" }

// SetRunDir is the run directory whose files /run/NAME serves.
func (s *Server) SetRunDir(dir string) {
	s.mu.Lock()
	s.dir = dir
	s.mu.Unlock()
}

// Close ends every event stream, stops serving and waits until the
// server's goroutines have returned. It is safe to call more than once.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.closing)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = s.http.Shutdown(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			err = s.http.Close()
		}
		if serr := <-s.served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
	})
	return err
}

// events streams the feed: its history first, then each event as it comes,
// until the feed, the page or the server ends.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	history, sub := s.feed.Subscribe(subscriberBuffer)
	defer sub.Close()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	for _, e := range history {
		if err := s.send(w, e); err != nil {
			return
		}
	}
	flusher.Flush()
	var dropped int64
	for {
		select {
		case e, open := <-sub.Events():
			if !open {
				return
			}
			if d := sub.Dropped(); d > dropped {
				dropped = d
				if s.write(w, fmt.Appendf(nil, `{"type":"dropped","dropped":%d}`, d)) != nil {
					return
				}
			}
			if s.send(w, e) != nil {
				return
			}
			flusher.Flush()
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
}

// send writes an event as one SSE message, every string redacted.
func (s *Server) send(w http.ResponseWriter, e study.Event) error {
	data, err := s.redacted(e)
	if err != nil {
		return err
	}
	return s.write(w, data)
}

func (s *Server) write(w http.ResponseWriter, data []byte) error {
	_, err := fmt.Fprintf(w, "data: %s\n\n", data)
	return err
}

// redacted is the event's JSON with the redaction applied to each string
// (not to the JSON text, where a password's quote or backslash would be
// escaped past it).
func (s *Server) redacted(e study.Event) ([]byte, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return json.Marshal(s.redactAll(v))
}

func (s *Server) redactAll(v any) any {
	switch v := v.(type) {
	case string:
		return s.redact(v)
	case []any:
		for i := range v {
			v[i] = s.redactAll(v[i])
		}
	case map[string]any:
		for k, x := range v {
			v[k] = s.redactAll(x)
		}
	}
	return v
}

// runFile serves a file of the run directory, read-only: through an
// os.Root, so no name (.., a symbolic link) reaches beyond it, and never a
// directory's listing.
func (s *Server) runFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	dir := s.dir
	s.mu.Unlock()
	name := r.PathValue("name")
	if dir == "" || name == "" || strings.HasPrefix(name, ".") {
		http.NotFound(w, r)
		return
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	http.ServeContent(w, r, name, st.ModTime(), f)
}
