package lmeval

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"tally/scoring"
)

// This file is the opt-in Python bridge: where tally has no Go port of a
// task's !function (hooks.go), and the user has named a Python
// interpreter (UsePython: tally's --python flag or TALLY_LMEVAL_PYTHON),
// the function runs in one long-lived worker process of that interpreter
// (pyworker.py, embedded), called as lm-eval calls it. Without it such a
// task is refused, saying how to opt in. A Go port, where there is one,
// always wins.
//
// The worker speaks frames over its stdin and stdout: a 4-byte
// big-endian length, then that much UTF-8 JSON (readFrame). One request
// at a time; an answer is the value or one line of the Python error. A
// worker that exits, answers out of turn or does not answer within the
// call's bound is killed, and every later call fails with the same error,
// which wraps scoring.ErrUnavailable (so a run stops rather than storing
// a score for it).

//go:embed pyworker.py
var pyWorkerSource string

// EnvPython is the environment variable that opts in to the Python
// bridge, as --python does: the interpreter to run task folders' Python
// functions with.
const EnvPython = "TALLY_LMEVAL_PYTHON"

// DefaultPythonTimeout bounds one call into the worker (a process_docs
// over a whole split included); past it the worker is deemed hung.
const DefaultPythonTimeout = 10 * time.Minute

// maxFrame bounds a frame's length (a split's documents in one frame).
const maxFrame = 1 << 30

// floatKey marks a float that JSON cannot carry (nan, inf, -inf).
const floatKey = "\x00float"

// ErrPythonWorker is wrapped by every error of a worker that is gone
// (exited, killed, hung, out of turn): the command ends with it.
var ErrPythonWorker = errors.New("python worker")

// pyBridge is the worker of one command: started at the first call,
// ended by the close function UsePython returns.
type pyBridge struct {
	interp  string
	ctx     context.Context
	timeout time.Duration

	mu      sync.Mutex
	cmd     *exec.Cmd
	in      io.WriteCloser
	replies chan pyReply
	exited  chan struct{}
	quit    chan struct{} // closed when the worker is given up
	stderr  *tailWriter
	nextID  int64
	dead    error
	started bool
	// described are the callables described, by module path and name.
	described map[[2]string]*pyCallable
}

// pyCallable is what the worker says of a module's callable.
type pyCallable struct {
	Handle int
	Repr   string
	Source *string // inspect.getsource, nil where it raises
	Kind   string  // "function" or "class"
	Name   string  // __name__
}

type pyReply struct {
	body []byte
	err  error
}

// bridgeState is the bridge loads use: nil when not opted in. static
// (the survey) accepts every !function whose module file exists without
// running Python.
var bridgeState struct {
	sync.Mutex
	b      *pyBridge
	static bool
}

// UsePython opts in to the Python bridge for the loads that follow:
// interpreter ("" for TALLY_LMEVAL_PYTHON, and none when that is unset
// too) runs the task folders' functions tally has no Go port of, in one
// worker process started at the first such function and ended by the
// function returned (or when ctx ends). It returns whether the bridge is
// on.
func UsePython(ctx context.Context, interpreter string) (on bool, stop func()) {
	if interpreter == "" {
		interpreter = os.Getenv(EnvPython)
	}
	if interpreter == "" {
		return false, func() {}
	}
	b := &pyBridge{interp: interpreter, ctx: ctx, timeout: DefaultPythonTimeout, described: map[[2]string]*pyCallable{}}
	bridgeState.Lock()
	bridgeState.b = b
	bridgeState.Unlock()
	return true, func() {
		bridgeState.Lock()
		if bridgeState.b == b {
			bridgeState.b = nil
		}
		bridgeState.Unlock()
		b.close()
	}
}

// PythonError is the error of the bridge's worker if it is gone (nil
// otherwise): a command whose run stopped on it reports this.
func PythonError() error {
	bridgeState.Lock()
	b := bridgeState.b
	bridgeState.Unlock()
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dead
}

// surveyWithBridge makes resolution accept every !function whose module
// exists (as the bridge would run it) without starting Python, for the
// survey's count; it returns the function that undoes it.
func surveyWithBridge() func() {
	bridgeState.Lock()
	bridgeState.static = true
	bridgeState.Unlock()
	return func() {
		bridgeState.Lock()
		bridgeState.static = false
		bridgeState.Unlock()
	}
}

func activeBridge() (*pyBridge, bool) {
	bridgeState.Lock()
	defer bridgeState.Unlock()
	return bridgeState.b, bridgeState.static
}

// start runs the worker (b.mu held).
func (b *pyBridge) start() error {
	if b.dead != nil {
		return b.dead
	}
	if b.started {
		return nil
	}
	b.started = true
	cmd := exec.Command(b.interp, "-u", "-c", pyWorkerSource)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	b.stderr = &tailWriter{max: 4096}
	cmd.Stderr = b.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return b.fail(fmt.Errorf("%w: start %s: %v", ErrPythonWorker, b.interp, err))
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return b.fail(fmt.Errorf("%w: start %s: %v", ErrPythonWorker, b.interp, err))
	}
	if err := cmd.Start(); err != nil {
		return b.fail(fmt.Errorf("%w: start %s (--python, %s): %v", ErrPythonWorker, b.interp, EnvPython, err))
	}
	b.cmd, b.in = cmd, in
	b.replies = make(chan pyReply, 1)
	b.exited = make(chan struct{})
	b.quit = make(chan struct{})
	quit, exited := b.quit, b.exited
	if b.ctx != nil {
		// A cancelled command ends an idle worker too (its group).
		pid := cmd.Process.Pid
		stop := context.AfterFunc(b.ctx, func() { syscall.Kill(-pid, syscall.SIGKILL) })
		go func() {
			<-exited
			stop()
		}()
	}
	go func() {
		r := bufio.NewReaderSize(out, 1<<16)
		for {
			body, err := readFrame(r)
			select {
			case b.replies <- pyReply{body, err}:
			case <-quit:
				err = io.EOF
			}
			if err != nil {
				break
			}
		}
		io.Copy(io.Discard, out)
		cmd.Wait()
		close(exited)
	}()
	return nil
}

// fail records the worker's end (b.mu held) and kills it.
func (b *pyBridge) fail(err error) error {
	if b.dead == nil {
		b.dead = err
	}
	b.kill()
	return b.dead
}

func (b *pyBridge) kill() {
	if b.quit != nil {
		select {
		case <-b.quit:
		default:
			close(b.quit)
		}
	}
	if b.cmd != nil && b.cmd.Process != nil {
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		b.cmd.Process.Kill()
	}
}

// close ends the worker: its input closed, then killed if it lingers.
func (b *pyBridge) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.started || b.cmd == nil {
		return
	}
	b.in.Close()
	select {
	case <-b.exited:
	case <-time.After(2 * time.Second):
		b.kill()
		<-b.exited
	}
	if b.dead == nil {
		b.dead = fmt.Errorf("%w: closed", ErrPythonWorker)
	}
}

// call sends one request and decodes the answer's value into out (an
// ordered value: decodeJSON's). what names the call for errors.
func (b *pyBridge) call(what string, req map[string]any) (any, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.start(); err != nil {
		return nil, err
	}
	b.nextID++
	id := b.nextID
	req["id"] = id
	body, err := marshalWire(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(body) > maxFrame {
		return nil, fmt.Errorf("%s: a request of %d bytes is more than a frame holds (%d)", what, len(body), maxFrame)
	}
	frame := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(frame, uint32(len(body)))
	copy(frame[4:], body)
	written := make(chan error, 1)
	go func() {
		_, err := b.in.Write(frame)
		written <- err
	}()
	timer := time.NewTimer(b.timeout)
	defer timer.Stop()
	var ctxDone <-chan struct{}
	if b.ctx != nil {
		ctxDone = b.ctx.Done()
	}
	for {
		select {
		case err := <-written:
			written = nil
			if err != nil {
				return nil, b.fail(fmt.Errorf("%w: %s: writing the request: %v%s", ErrPythonWorker, what, err, b.lastWords()))
			}
		case r := <-b.replies:
			if r.err != nil {
				select {
				case <-b.exited:
				case <-time.After(2 * time.Second):
					b.kill()
					<-b.exited
				}
				status := ""
				if b.cmd.ProcessState != nil {
					status = " (" + b.cmd.ProcessState.String() + ")"
				}
				if errors.Is(r.err, io.EOF) {
					return nil, b.fail(fmt.Errorf("%w: %s: the worker exited%s%s", ErrPythonWorker, what, status, b.lastWords()))
				}
				return nil, b.fail(fmt.Errorf("%w: %s: %v%s", ErrPythonWorker, what, r.err, b.lastWords()))
			}
			return b.answer(what, id, r.body)
		case <-timer.C:
			return nil, b.fail(fmt.Errorf("%w: %s: no answer within %s (the worker is killed)", ErrPythonWorker, what, b.timeout))
		case <-ctxDone:
			return nil, b.fail(fmt.Errorf("%w: %s: %w", ErrPythonWorker, what, context.Cause(b.ctx)))
		}
	}
}

// answer reads an answer frame.
func (b *pyBridge) answer(what string, id int64, body []byte) (any, error) {
	v, err := decodeWire(body)
	if err != nil {
		return nil, b.fail(fmt.Errorf("%w: %s: a malformed answer: %v", ErrPythonWorker, what, err))
	}
	m, ok := v.(*Map)
	if !ok {
		return nil, b.fail(fmt.Errorf("%w: %s: an answer that is not an object", ErrPythonWorker, what))
	}
	if got, _ := m.Get("id"); got != id {
		return nil, b.fail(fmt.Errorf("%w: %s: an answer out of turn (id %s, not %d)", ErrPythonWorker, what, pyStr(got), id))
	}
	if e, ok := m.Get("error"); ok {
		return nil, fmt.Errorf("%s: Python raised %s", what, pyStr(e))
	}
	out, ok := m.Get("ok")
	if !ok {
		return nil, b.fail(fmt.Errorf("%w: %s: an answer with neither ok nor error", ErrPythonWorker, what))
	}
	return out, nil
}

// lastWords is the last line the worker wrote on standard error, for a
// worker that died.
func (b *pyBridge) lastWords() string {
	if b.stderr == nil {
		return ""
	}
	s := strings.TrimSpace(b.stderr.String())
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return ": " + s
}

// tailWriter keeps the last max bytes written.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > w.max {
		w.buf = append([]byte(nil), w.buf[len(w.buf)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// readFrame reads one frame: a 4-byte big-endian length, then the body.
// io.EOF only when the stream ends before a frame starts.
func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errors.New("the stream ended inside a frame's length")
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("a frame of %d bytes is more than %d", n, maxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("the stream ended inside a frame of %d bytes", n)
	}
	return body, nil
}

// decodeWire decodes a frame's JSON: objects as ordered Maps, numbers as
// int64 or float64 as Python wrote them, {"\u0000float": "nan"} as the
// float.
func decodeWire(body []byte) (any, error) {
	v, err := decodeJSON(body)
	if err != nil {
		return nil, err
	}
	return unwrapFloats(v)
}

func unwrapFloats(v any) (any, error) {
	switch x := v.(type) {
	case *Map:
		if x.Len() == 1 && x.Keys[0] == floatKey {
			switch x.Vals[floatKey] {
			case "nan":
				return math.NaN(), nil
			case "inf":
				return math.Inf(1), nil
			case "-inf":
				return math.Inf(-1), nil
			}
			return nil, fmt.Errorf("a float %s", pyStr(x.Vals[floatKey]))
		}
		for _, k := range x.Keys {
			e, err := unwrapFloats(x.Vals[k])
			if err != nil {
				return nil, err
			}
			x.Vals[k] = e
		}
	case []any:
		for i, e := range x {
			u, err := unwrapFloats(e)
			if err != nil {
				return nil, err
			}
			x[i] = u
		}
	}
	return v, nil
}

// marshalWire writes a request: maps in key order, floats as Python
// reads them back (non-finite ones marked).
func marshalWire(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeWire(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeWire(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case float64:
		switch {
		case math.IsNaN(x):
			b.WriteString(`{"\u0000float":"nan"}`)
		case math.IsInf(x, 1):
			b.WriteString(`{"\u0000float":"inf"}`)
		case math.IsInf(x, -1):
			b.WriteString(`{"\u0000float":"-inf"}`)
		default:
			mb, err := marshalValue(x)
			if err != nil {
				return err
			}
			b.Write(mb)
		}
	case map[string]any:
		keys := sortedKeys(x)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			if err := writeWire(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case *Map:
		b.WriteByte('{')
		for i, k := range x.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			if err := writeWire(b, x.Vals[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeWire(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case []*Map:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeWire(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case Function:
		return fmt.Errorf("%s cannot be given to the Python worker", x)
	default:
		mb, err := json.Marshal(x)
		if err != nil {
			return err
		}
		b.Write(mb)
	}
	return nil
}

// workerError marks a dead worker's error as scoring.ErrUnavailable (so
// that a run stops on it), its message unchanged.
func workerError(err error) error {
	if errors.Is(err, ErrPythonWorker) {
		return unavailable{err}
	}
	return err
}

// unavailable is an error that is also scoring.ErrUnavailable.
type unavailable struct{ error }

func (u unavailable) Unwrap() []error { return []error{u.error, scoring.ErrUnavailable} }
