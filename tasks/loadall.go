package tasks

import (
	"runtime"

	"golang.org/x/sync/errgroup"
)

// LoadAll loads every config's samples with the same options, the configs
// on every core at once (a large suite's data is most of what a plan
// reads). The loads are in the configs' order; the error is the first
// config's that failed, in that order, whichever failed first.
func LoadAll(cfgs []*Config, opt LoadOptions) ([]Loaded, error) {
	all, errs := make([]Loaded, len(cfgs)), make([]error, len(cfgs))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, c := range cfgs {
		g.Go(func() error {
			all[i], errs[i] = c.Load(opt)
			return nil
		})
	}
	g.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return all, nil
}
