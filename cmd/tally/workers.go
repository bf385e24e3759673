package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"tally/generate"
	"tally/store"
)

// printWorkers writes the workers that are live or hold claims (worker id,
// host, status, claims held, lease expiry, last heartbeat; times relative
// to the database's clock, which every worker's leases are stamped by),
// then counts of the others. Nothing is written when no worker is live
// and no claim is held.
func printWorkers(w io.Writer, v store.WorkerView) error {
	if len(v.Active) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(v.Active) > 0 {
		fmt.Fprintln(tw, "WORKER\tHOST\tSTATUS\tCLAIMS\tLEASE EXPIRES\tHEARTBEAT\tMODEL\tRUN")
		for _, x := range v.Active {
			status := x.Status
			switch {
			case status == "":
				status = "unregistered"
			case x.Live:
				status = "live"
			case status == store.WorkerWorking:
				status = "dead (no heartbeat)"
			}
			expiry, beat, run := "-", "-", "-"
			if x.Claims > 0 {
				expiry = relTime(x.LeaseExpiry, v.Now)
			}
			if !x.Heartbeat.IsZero() {
				beat = relTime(x.Heartbeat, v.Now)
			}
			if x.RunID > 0 {
				run = fmt.Sprint(x.RunID)
			}
			host := x.Host
			if host == "" {
				host = "-"
			}
			model := x.Model
			if model == "" {
				model = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", x.ID, host, status, x.Claims, expiry, beat, model, run)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	live := 0
	for _, x := range v.Active {
		if x.Live {
			live++
		}
	}
	_, err := fmt.Fprintf(w, "workers: %d live, %d finished, %d dead without claims; claims: %d held, %d unexpired (by the database's clock, %s)\n",
		live, v.Finished, v.Dead, v.Claimed, v.LiveClaims, v.Now.UTC().Format(time.RFC3339))
	return err
}

// printWorkersSection is printWorkers after a blank line, for the end of
// tally ls (nothing when there is nothing to show).
func printWorkersSection(w io.Writer, v store.WorkerView) error {
	if len(v.Active) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	return printWorkers(w, v)
}

// relTime says when t is relative to now: "in 12s" or "3s ago".
func relTime(t, now time.Time) string {
	d := t.Sub(now).Round(time.Second)
	if d >= 0 {
		return "in " + d.String()
	}
	return (-d).String() + " ago"
}

// planClaims is what tally plan says about the work of a plan that
// workers hold now.
type planClaims struct {
	// Claimed counts the plan's requests whose generation a live worker
	// has claimed (it is being generated now).
	Claimed int `json:"claimed"`
	// Workers are the model's workers that are live or hold claims.
	Workers []store.Worker `json:"workers"`
}

// claimsOfPlan reads which of the plan's requests live workers hold, and
// the model's workers.
func claimsOfPlan(ctx context.Context, st *store.Store, p *generate.Plan) (planClaims, store.WorkerView, error) {
	var keys []string
	for _, it := range p.Work() {
		keys = append(keys, it.Key)
	}
	held, err := st.Claimants(ctx, keys)
	if err != nil {
		return planClaims{}, store.WorkerView{}, err
	}
	v, err := st.Workers(ctx, p.Fingerprint)
	if err != nil {
		return planClaims{}, store.WorkerView{}, err
	}
	out := planClaims{Workers: v.Active}
	if out.Workers == nil {
		out.Workers = []store.Worker{}
	}
	for _, it := range p.Work() {
		if held[it.Key] != "" {
			out.Claimed++
		}
	}
	return out, v, nil
}
