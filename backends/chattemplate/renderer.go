package chattemplate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// This file is the parent's side of rendering: a Renderer keeps a few
// worker processes (the running executable started again with workerEnv
// set, which package chattemplate's init turns into a worker: worker.go)
// and speaks to each over its standard input and output. A request and
// its answer are small binary frames (framing below): a prompt of
// megabytes passes as is, where JSON would cost several times the render.
//
// The parent bounds each exchange in time: past Bounds.Deadline it kills
// the worker, and the render fails. A worker that ends any other way (out
// of memory, a stack overflow: Go's fatal errors, which no goroutine can
// recover from) fails the render it was doing, its reason read from what
// it wrote to stderr. Either way the worker is dropped, and the next
// render starts another.

// ErrBounds is wrapped by the error of a compilation or render that went
// past its Renderer's Bounds (time, memory, stack, output).
var ErrBounds = errors.New("past the chat template's bounds")

// Bounds are what one chat template may cost.
type Bounds struct {
	// Memory is what a worker may map beyond what it held when it started
	// (its address-space limit on Linux; elsewhere a watchdog reads the
	// Go runtime's memory), in bytes. The worker's garbage collector
	// works to stay within three quarters of it.
	Memory int64
	// Stack is the most a worker's goroutine stack may grow to, in bytes
	// (a recursive macro ends there).
	Stack int
	// Deadline is how long one compilation or render may take, counted
	// from its request; past it the worker is killed.
	Deadline time.Duration
	// Output is the most text one render may produce, in bytes.
	Output int
	// Workers is how many worker processes may render at once (each
	// render occupies one); they are started as renders need them.
	Workers int
}

// DefaultBounds are the bounds of New, Load, LoadIn and Parse: 1 GiB of
// memory and 64 MiB of stack per worker, 10 s and 64 MiB of text per
// render, and a worker per core up to 4. A real template renders in
// microseconds to milliseconds (a prompt of megabytes), and needs a few
// times its prompt in memory; a prompt is at most 16 MiB (the bound of a
// data row).
var DefaultBounds = Bounds{
	Memory:   1 << 30,
	Stack:    64 << 20,
	Deadline: 10 * time.Second,
	Output:   64 << 20,
	Workers:  min(runtime.GOMAXPROCS(0), 4),
}

// startBound is how long a new worker may take to say it is ready; a
// start is the executable's start, milliseconds on an idle machine.
const startBound = 30 * time.Second

// Renderer compiles and renders chat templates in worker processes under
// its Bounds. It is safe for concurrent use. The zero value is not usable:
// make one with NewRenderer.
type Renderer struct {
	bounds Bounds
	slots  chan struct{} // a token per render in progress
	ids    atomic.Uint64

	mu     sync.Mutex
	idle   []*worker
	closed bool
}

// NewRenderer returns a Renderer under bounds (a zero field takes
// DefaultBounds'). It starts no process: its first compilation does.
func NewRenderer(bounds Bounds) *Renderer {
	d := DefaultBounds
	if bounds.Memory <= 0 {
		bounds.Memory = d.Memory
	}
	if bounds.Stack <= 0 {
		bounds.Stack = d.Stack
	}
	if bounds.Deadline <= 0 {
		bounds.Deadline = d.Deadline
	}
	if bounds.Output <= 0 {
		bounds.Output = d.Output
	}
	if bounds.Workers <= 0 {
		bounds.Workers = max(d.Workers, 1)
	}
	return &Renderer{bounds: bounds, slots: make(chan struct{}, bounds.Workers)}
}

// defaultRenderer is the Renderer of New; its workers end with the
// process (their request pipe closes).
var defaultRenderer = sync.OnceValue(func() *Renderer { return NewRenderer(DefaultBounds) })

// Bounds returns r's bounds.
func (r *Renderer) Bounds() Bounds { return r.bounds }

// Close ends r's idle workers, and each busy one once its render is
// done; r renders no more.
func (r *Renderer) Close() error {
	r.mu.Lock()
	idle := r.idle
	r.idle, r.closed = nil, true
	r.mu.Unlock()
	for _, w := range idle {
		w.stop()
	}
	return nil
}

// New compiles a template source with the given special tokens in one of
// r's workers: a source the engine refuses, or one whose compilation goes
// past r's bounds, is an error.
func (r *Renderer) New(source, bos, eos string) (*Template, error) {
	t := &Template{r: r, id: r.ids.Add(1), source: source, BOS: bos, EOS: eos}
	err := r.with(func(w *worker) error { return w.define(t) })
	if err != nil {
		return nil, fmt.Errorf("compile chat template: %w", err)
	}
	return t, nil
}

// render renders msgs with t in one of r's workers.
func (r *Renderer) render(t *Template, msgs []Message, addGen bool, now time.Time) (string, error) {
	var out string
	err := r.with(func(w *worker) error {
		var err error
		out, err = w.render(t, msgs, addGen, now)
		if errors.Is(err, errUnknown) {
			// The worker has not compiled t yet (a new worker).
			if err = w.define(t); err == nil {
				out, err = w.render(t, msgs, addGen, now)
			}
		}
		return err
	})
	return out, err
}

// with runs f on an idle worker (started if none is), waiting while r's
// every worker is busy. A worker f leaves broken is stopped.
func (r *Renderer) with(f func(*worker) error) error {
	r.slots <- struct{}{}
	defer func() { <-r.slots }()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return errors.New("chat template renderer closed")
	}
	var w *worker
	if n := len(r.idle); n > 0 {
		w, r.idle = r.idle[n-1], r.idle[:n-1]
	}
	r.mu.Unlock()
	if w == nil {
		var err error
		if w, err = startWorker(r.bounds); err != nil {
			return err
		}
	}
	err := f(w)
	r.mu.Lock()
	keep := !w.broken && !r.closed
	if keep {
		r.idle = append(r.idle, w)
	}
	r.mu.Unlock()
	if !keep {
		w.stop()
	}
	return err
}

// workerEnv is the environment variable that makes a process a worker
// (init in worker.go): its value is workerVersion and the bounds.
const workerEnv = "TALLY_CHAT_TEMPLATE_WORKER"

// workerVersion names this protocol; a worker says it when ready.
const workerVersion = "tally-chattemplate/1"

// Operations and answers of the protocol. A request is an operation byte
// and its fields; an answer is a status byte and one string (the text, or
// an error's message).
const (
	opDefine = 'T' // template id, source
	opRender = 'R' // template id, add_generation_prompt, clock, bos, eos, messages

	statusOK      = 0
	statusError   = 1 // the template's own error (compilation or raise_exception)
	statusUnknown = 2 // the worker has not compiled that template
	statusBound   = 3 // past a bound the worker checks itself (output)
)

// errUnknown is a worker's answer that it has not compiled a template.
var errUnknown = errors.New("template not compiled in this worker")

// worker is the parent's handle on one worker process.
type worker struct {
	bounds Bounds
	cmd    *exec.Cmd
	req    *os.File // our end of the requests' pipe
	resp   *os.File // our end of the answers' pipe
	w      *bufio.Writer
	r      *bufio.Reader
	output *headBuffer   // what the worker wrote to stdout and stderr
	done   chan struct{} // closed once the process has ended
	err    error         // how it ended, once done is closed
	broken bool          // dropped after this exchange
	killed atomic.Bool   // killed past a deadline
}

// executable is the program a worker runs: this very executable. On Linux
// /proc/self/exe is that file even when its path has since been replaced
// (an upgrade during a run), so a worker is always the same build as its
// parent.
func executable() (string, error) {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// startWorker starts a worker under b and waits until it is ready.
func startWorker(b Bounds) (*worker, error) {
	exe, err := executable()
	if err != nil {
		return nil, fmt.Errorf("start chat template renderer: %w", err)
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start chat template renderer: %w", err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, fmt.Errorf("start chat template renderer: %w", err)
	}
	w := &worker{bounds: b, req: reqW, resp: respR, output: &headBuffer{max: 8 << 10}, done: make(chan struct{})}
	w.cmd = exec.Command(exe)
	w.cmd.Env = append(os.Environ(),
		workerEnv+"="+b.workerEnvValue(),
		"GOTRACEBACK=none") // a fatal error's first lines, not every goroutine's stack
	w.cmd.Stdin, w.cmd.Stdout, w.cmd.Stderr = reqR, respW, w.output
	w.cmd.SysProcAttr = workerAttr()
	err = w.cmd.Start()
	reqR.Close()
	respW.Close()
	if err != nil {
		reqW.Close()
		respR.Close()
		return nil, fmt.Errorf("start chat template renderer %s: %w", exe, err)
	}
	go func() {
		w.err = w.cmd.Wait()
		close(w.done)
	}()
	growPipe(reqW)
	growPipe(respR)
	w.w = bufio.NewWriterSize(reqW, 64<<10)
	w.r = bufio.NewReaderSize(respR, 64<<10)
	timer := time.AfterFunc(startBound, func() { w.killed.Store(true); w.cmd.Process.Kill() })
	hello, err := w.r.ReadString('\n')
	if !timer.Stop() && err == nil {
		err = errors.New("killed")
	}
	if err == nil && hello != workerVersion+"\n" {
		err = fmt.Errorf("it said %.80q, not %q", hello, workerVersion)
	}
	if err != nil {
		w.broken = true
		cause := w.failure(err, startBound)
		if w.killed.Load() {
			cause = fmt.Errorf("not ready after %v", startBound)
		}
		w.stop()
		return nil, fmt.Errorf("start chat template renderer %s: %w", exe, cause)
	}
	return w, nil
}

// define has the worker compile t.
func (w *worker) define(t *Template) error {
	_, err := w.call(func(f *bufio.Writer) {
		f.WriteByte(opDefine)
		putUvarint(f, t.id)
		putString(f, t.source)
	})
	return err
}

// render has the worker render msgs with t (errUnknown: compile it first).
func (w *worker) render(t *Template, msgs []Message, addGen bool, now time.Time) (string, error) {
	return w.call(func(f *bufio.Writer) {
		f.WriteByte(opRender)
		putUvarint(f, t.id)
		putBool(f, addGen)
		_, offset := now.Zone()
		putVarint(f, now.Unix())
		putUvarint(f, uint64(now.Nanosecond()))
		putVarint(f, int64(offset))
		putString(f, t.BOS)
		putString(f, t.EOS)
		putUvarint(f, uint64(len(msgs)))
		for _, m := range msgs {
			putString(f, m.Role)
			putString(f, m.Content)
		}
	})
}

// call sends a request and reads its answer within the deadline, killing
// the worker past it. Any failure but the template's own error leaves the
// worker broken.
func (w *worker) call(request func(*bufio.Writer)) (string, error) {
	b := w.bounds
	timer := time.AfterFunc(b.Deadline, func() { w.killed.Store(true); w.cmd.Process.Kill() })
	request(w.w)
	err := w.w.Flush()
	var status byte
	var text string
	if err == nil {
		status, err = w.r.ReadByte()
	}
	if err == nil {
		// The answer's size is bounded before it is read: the output, or
		// an error's message.
		text, err = getString(w.r, uint64(b.Output))
	}
	if !timer.Stop() && err == nil {
		// Killed as the answer came: the answer holds, the worker is gone.
		w.broken = true
	}
	if err != nil {
		w.broken = true
		return "", w.failure(err, b.Deadline)
	}
	switch status {
	case statusOK:
		return text, nil
	case statusError:
		return "", errors.New(text)
	case statusUnknown:
		return "", errUnknown
	case statusBound:
		return "", fmt.Errorf("%w: %s", ErrBounds, text)
	}
	w.broken = true
	return "", fmt.Errorf("chat template renderer: answer of status %d", status)
}

// stop kills the worker (if it still runs), closes our pipes and waits a
// moment for it to end.
func (w *worker) stop() {
	w.cmd.Process.Kill()
	w.req.Close()
	w.resp.Close()
	select {
	case <-w.done:
	case <-time.After(5 * time.Second): // reaped when it ends
	}
}

// failure says why an exchange with the worker failed (err, from the
// pipes): killed past its deadline, or ended by a bound of its own (its
// fatal error on stderr), else how it ended.
func (w *worker) failure(err error, deadline time.Duration) error {
	if w.killed.Load() {
		return fmt.Errorf("%w: took longer than %v (its renderer was stopped)", ErrBounds, deadline)
	}
	// The pipe broke because the process ended, or is ending: wait for
	// its end and what it wrote. Any other error is of the exchange.
	w.cmd.Process.Kill()
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("chat template renderer: %w", err)
	}
	select {
	case <-w.done:
	case <-time.After(5 * time.Second):
		return fmt.Errorf("chat template renderer: %w", err)
	}
	out := w.output.String()
	switch {
	case strings.Contains(out, "goroutine stack exceeds"):
		return fmt.Errorf("%w: recursed past its stack of %s (the renderer crashed)", ErrBounds, mib(int64(w.bounds.Stack)))
	case strings.Contains(out, "out of memory") || strings.Contains(out, workerMemoryMsg) ||
		strings.Contains(out, "failed to create new OS thread") || strings.Contains(out, "cannot allocate memory"):
		return fmt.Errorf("%w: needed more than its %s of memory (the renderer crashed)", ErrBounds, mib(w.bounds.Memory))
	}
	why := "ended"
	if w.err != nil {
		why = w.err.Error()
	}
	if line := firstLine(out); line != "" {
		why += ": " + line
	}
	return fmt.Errorf("chat template renderer crashed (%s)", why)
}

// mib writes n bytes in GiB or MiB where it is a whole number of them.
func mib(n int64) string {
	if n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// firstLine is the first line of out that says something: a fatal error
// or a panic if there is one.
func firstLine(out string) string {
	lines := strings.Split(out, "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") {
			return l
		}
	}
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

// Write keeps what fits of p, and says all of it was written.
func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.max - h.b.Len(); room > 0 {
		h.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// String returns what was kept.
func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.b.String()
}

// Framing: unsigned and signed varints, booleans as a byte, strings as
// their length and bytes.

func putUvarint(w *bufio.Writer, x uint64) {
	for x >= 0x80 {
		w.WriteByte(byte(x) | 0x80)
		x >>= 7
	}
	w.WriteByte(byte(x))
}

func putVarint(w *bufio.Writer, x int64) {
	ux := uint64(x) << 1
	if x < 0 {
		ux = ^ux
	}
	putUvarint(w, ux)
}

func putBool(w *bufio.Writer, b bool) {
	if b {
		w.WriteByte(1)
	} else {
		w.WriteByte(0)
	}
}

func putString(w *bufio.Writer, s string) {
	putUvarint(w, uint64(len(s)))
	w.WriteString(s)
}

func getUvarint(r *bufio.Reader) (uint64, error) {
	var x uint64
	for shift := uint(0); shift < 64; shift += 7 {
		c, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, nil
		}
	}
	return 0, errors.New("varint overflows 64 bits")
}

func getVarint(r *bufio.Reader) (int64, error) {
	ux, err := getUvarint(r)
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x, err
}

func getBool(r *bufio.Reader) (bool, error) {
	c, err := r.ReadByte()
	return c != 0, err
}

// getString reads a string of at most max bytes.
func getString(r *bufio.Reader, max uint64) (string, error) {
	n, err := getUvarint(r)
	if err != nil {
		return "", err
	}
	if n > max {
		return "", fmt.Errorf("a string of %d bytes, more than the %d expected", n, max)
	}
	if n == 0 {
		return "", nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", unexpected(err)
	}
	return string(b), nil
}

// unexpected turns an EOF in the middle of a frame into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
