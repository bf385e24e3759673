package chattemplate

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// This file is the worker's side: a process started by a Renderer (with
// workerEnv set) compiles and renders templates until its requests' pipe
// closes, under the bounds its parent gave it. Whatever goes past one
// ends this process, never the parent.

// init makes the process a chat template worker when workerEnv is set, so
// that any program linking this package (tally, a test binary) can serve
// as its own renderer: it serves its parent, then exits, before main (or
// a test) runs.
func init() {
	if v, ok := os.LookupEnv(workerEnv); ok {
		os.Exit(runWorker(v))
	}
}

// workerMemoryMsg starts the line a worker writes when its watchdog finds
// it past its memory bound.
const workerMemoryMsg = "chat template worker: memory past its bound"

// maxCompiled is how many compiled templates a worker keeps; past it, it
// forgets them all (its parent sends a template again when asked for it).
const maxCompiled = 64

// maxMessage bounds the message of a template's error that a worker sends.
const maxMessage = 64 << 10

// workerEnvValue is workerEnv's value for a worker under b.
func (b Bounds) workerEnvValue() string {
	return fmt.Sprintf("%s %d %d %d", workerVersion, b.Memory, b.Stack, b.Output)
}

// parseWorkerEnv reads workerEnv's value.
func parseWorkerEnv(v string) (Bounds, error) {
	f := strings.Fields(v)
	if len(f) != 4 || f[0] != workerVersion {
		return Bounds{}, fmt.Errorf("%s=%q: not what this build's renderer passes (%s MEMORY STACK OUTPUT)", workerEnv, v, workerVersion)
	}
	var n [3]int64
	for i := range n {
		x, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || x <= 0 {
			return Bounds{}, fmt.Errorf("%s=%q: field %d is not a positive number", workerEnv, v, i+2)
		}
		n[i] = x
	}
	return Bounds{Memory: n[0], Stack: int(n[1]), Output: int(n[2])}, nil
}

// runWorker serves as a worker under the bounds env gives, reading
// requests from standard input and writing answers to standard output;
// it returns the exit status.
func runWorker(env string) int {
	b, err := parseWorkerEnv(env)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// One render at a time: two threads of Go code (the render and the
	// garbage collector) are enough.
	runtime.GOMAXPROCS(min(2, runtime.NumCPU()))
	debug.SetMaxStack(b.Stack)
	debug.SetMemoryLimit(b.Memory / 4 * 3)
	if err := limitMemory(b.Memory); err != nil {
		go watchMemory(uint64(b.Memory))
	}
	go watchParent()
	// Standard output carries answers alone: anything else the process
	// would print goes to standard error.
	answers := os.Stdout
	os.Stdout = os.Stderr
	if err := serve(os.Stdin, answers, b); err != nil {
		fmt.Fprintf(os.Stderr, "chat template worker: %v\n", err)
		return 1
	}
	return 0
}

// watchMemory ends the process once the Go runtime holds more than limit
// bytes (where no address-space limit could be set).
func watchMemory(limit uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	for range time.Tick(5 * time.Millisecond) {
		metrics.Read(s)
		if s[0].Value.Uint64()-s[1].Value.Uint64() > limit {
			fmt.Fprintf(os.Stderr, "%s of %d bytes\n", workerMemoryMsg, limit)
			os.Exit(2)
		}
	}
}

// watchParent ends the process once its parent has gone (a render that
// never ends would keep it alive; an idle worker ends as its requests'
// pipe closes).
func watchParent() {
	parent := os.Getppid()
	for range time.Tick(100 * time.Millisecond) {
		if os.Getppid() != parent {
			os.Exit(1)
		}
	}
}

// serve answers the requests read from in on out until in ends.
func serve(in io.Reader, out io.Writer, b Bounds) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(out, 64<<10)
	w.WriteString(workerVersion + "\n")
	if err := w.Flush(); err != nil {
		return err
	}
	compiled := map[uint64]*jinja.Template{}
	answer := func(status byte, text string) error {
		w.WriteByte(status)
		putString(w, text)
		return w.Flush()
	}
	// A request's strings are as long as its parent makes them: this
	// bound only stops a corrupt length.
	const maxField = 1 << 40
	for {
		op, err := r.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch op {
		case opDefine:
			id, err := getUvarint(r)
			if err != nil {
				return unexpected(err)
			}
			src, err := getString(r, maxField)
			if err != nil {
				return unexpected(err)
			}
			t, err := compile(src)
			if err != nil {
				err = answer(statusError, message(err))
			} else {
				if len(compiled) >= maxCompiled {
					clear(compiled)
				}
				compiled[id] = t
				err = answer(statusOK, "")
			}
			if err != nil {
				return err
			}
		case opRender:
			req, err := readRender(r, maxField)
			if err != nil {
				return unexpected(err)
			}
			t, ok := compiled[req.id]
			if !ok {
				err = answer(statusUnknown, "")
			} else if text, rerr := renderValues(t, req); rerr != nil {
				err = answer(statusError, message(rerr))
			} else if len(text) > b.Output {
				err = answer(statusBound, fmt.Sprintf("wrote %d bytes, more than the %s a render may", len(text), mib(int64(b.Output))))
			} else {
				err = answer(statusOK, text)
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown operation %d", op)
		}
	}
}

// renderRequest is a render's request as a worker reads it.
type renderRequest struct {
	id       uint64
	addGen   bool
	now      time.Time
	bos, eos string
	msgs     []Message
}

// readRender reads the fields of an opRender request.
func readRender(r *bufio.Reader, maxField uint64) (req renderRequest, err error) {
	if req.id, err = getUvarint(r); err != nil {
		return req, err
	}
	if req.addGen, err = getBool(r); err != nil {
		return req, err
	}
	sec, err := getVarint(r)
	if err != nil {
		return req, err
	}
	nsec, err := getUvarint(r)
	if err != nil {
		return req, err
	}
	offset, err := getVarint(r)
	if err != nil {
		return req, err
	}
	req.now = time.Unix(sec, int64(nsec)).In(time.FixedZone("", int(offset)))
	if req.bos, err = getString(r, maxField); err != nil {
		return req, err
	}
	if req.eos, err = getString(r, maxField); err != nil {
		return req, err
	}
	n, err := getUvarint(r)
	if err != nil {
		return req, err
	}
	if n > 1<<20 {
		return req, fmt.Errorf("%d messages", n)
	}
	req.msgs = make([]Message, n)
	for i := range req.msgs {
		if req.msgs[i].Role, err = getString(r, maxField); err != nil {
			return req, err
		}
		if req.msgs[i].Content, err = getString(r, maxField); err != nil {
			return req, err
		}
	}
	return req, nil
}

// message is err's text, cut to maxMessage bytes.
func message(err error) string {
	s := err.Error()
	if len(s) > maxMessage {
		s = s[:maxMessage] + "…"
	}
	return s
}

// compile compiles src; a panic of the engine is its error.
func compile(src string) (t *jinja.Template, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("the template engine failed: %v", p)
		}
	}()
	return jinja.Compile(src)
}

// renderValues renders req with t as transformers' apply_chat_template
// does (messages, add_generation_prompt, bos_token, eos_token and
// strftime_now at req's time); a panic of the engine is its error.
func renderValues(t *jinja.Template, req renderRequest) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("the template engine failed: %v", p)
		}
	}()
	list := make([]jinja.Value, len(req.msgs))
	for i, m := range req.msgs {
		d := jinja.NewDict()
		d.AsDict().Set("role", jinja.NewString(m.Role))
		d.AsDict().Set("content", jinja.NewString(m.Content))
		list[i] = d
	}
	return t.RenderValues(map[string]jinja.Value{
		"messages":              jinja.NewList(list),
		"add_generation_prompt": jinja.NewBool(req.addGen),
		"bos_token":             jinja.NewString(req.bos),
		"eos_token":             jinja.NewString(req.eos),
		"strftime_now": jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 || !args[0].IsString() {
				return jinja.Undefined(), errors.New("strftime_now takes one format string")
			}
			return jinja.NewString(strftime(req.now, args[0].AsString())), nil
		}),
	})
}
