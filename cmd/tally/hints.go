package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"syscall"

	"tally/backends/gomlx"
	"tally/internal/lmevalcli"
	"tally/store"
)

// Messages a newcomer can act on: each error below ends in one line saying
// what to do.

// modelForms is what --model takes.
const modelForms = "--model takes " + lmevalcli.ModelForms

// openStoreReadOnly opens an existing store for a read-only command; a
// store that is not there is one line naming the default store and the
// flag that names another.
func openStoreReadOnly(ctx context.Context, path string, stderr io.Writer) (*store.Store, error) {
	st, err := store.OpenReadOnly(ctx, path)
	if errors.Is(err, store.ErrNoStore) {
		return nil, fmt.Errorf("no store at %s: the default store is ./tally.db in the current directory, written by `tally run` or `tally demo`; "+
			"pass --store PATH (or set TALLY_STORE) to read another", path)
	}
	if err == nil && st.Upgraded() != nil {
		fmt.Fprintf(stderr, "note: %s was written by an earlier tally and holds generations made for other prompts under one task name (%s): "+
			"read through a copy upgraded to keep them apart, the store itself unchanged; `tally upgrade --store %s` upgrades it once\n",
			st.Path(), strings.Join(st.Upgraded().Tasks, "; "), st.Path())
	}
	return st, err
}

// storeExists reports whether the store at path is there to be opened (a
// PostgreSQL store always is, for this purpose: opening it creates no file).
func storeExists(path string) bool {
	if store.IsPostgres(path) {
		return true
	}
	_, err := os.Stat(path)
	return err == nil
}

// noResults is the error of a read-only command on a store that holds no
// runs or generations (a run that failed before doing anything).
func noResults(path string) error {
	return fmt.Errorf("store %s holds no runs: nothing to report; run `tally run --model M --tasks T --store %s` (or `tally demo --store %s`) first", path, path, path)
}

// modelHint adds to an error opening the model spec what to do about it:
// the forms --model takes, for a path that is not a model; how to reach
// the server, for a server that refused the connection.
func modelHint(spec string, err error) error {
	if errors.Is(err, gomlx.ErrNotModel) {
		return fmt.Errorf("%w; %s", err, modelForms)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return err
	}
	at := ""
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			at = " at " + u.Scheme + "://" + u.Host
		}
	}
	switch {
	case strings.HasPrefix(spec, "ollama:"):
		return fmt.Errorf("open model %s: no Ollama server answers%s (connection refused): start one (`ollama serve`) or set OLLAMA_HOST to the one you use", spec, at)
	case strings.HasPrefix(spec, "openai:"):
		return fmt.Errorf("open model %s: no server answers%s (connection refused): start it, or pass --base-url (or set OPENAI_BASE_URL) with its API root, e.g. http://127.0.0.1:8000/v1", spec, at)
	}
	return err
}
