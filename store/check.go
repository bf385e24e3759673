package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Check is `tally check`: the full check of a SQLite store, and what it
// finds lost. It runs SQLite's integrity_check (every page, and every
// index against its table), checks the schema (tally's tables, nothing
// else), every generation's seal, every packed row of scores' seal (a row
// from before seals against its rows of scores), every key's rows of
// scores against its packed row, and score_digests against the packed
// rows. A sealed packed row that holds is the store's word on its key's
// scores; a sealed generation that holds, on itself.
//
// With repair, and when SQLite finds the file itself sound and its schema
// is this tally's, Check then mends what the rows' own copies allow, in
// one transaction: a key's rows of scores and its digest are rewritten
// from its packed row; a packed row that fails its seal (or, from before
// seals, disagrees with its scores) is dropped with the key's scores,
// which `tally rescore` computes again from the generation; a generation
// that fails its seal is dropped, which `tally rerun` generates again.
// Nothing else is written.

// CheckReport is what Check found, and did.
type CheckReport struct {
	// Store is the store as printed.
	Store string
	// Version is the store's schema version.
	Version int
	// Schema says why the file is not a tally store ("" when it is).
	Schema string
	// SQLite are integrity_check's findings (its trees named as tables).
	SQLite []string
	// Generations and Scores count the rows read (generations, packed
	// rows of scores), and Unsealed those of each written before seals.
	Generations, Scores                 int
	UnsealedGenerations, UnsealedScores int
	// Unreadable says, per table, where a read of its rows stopped.
	Unreadable []string
	// Lost are the rows found damaged, or disagreeing with their other
	// copy.
	Lost []LostRow
	// Repaired says what a repair did ("" when none ran).
	Repaired string
	models   map[string]string
}

// LostRow is a damaged row Check found.
type LostRow struct {
	// Table is generations, packed_scores, scores or score_digests.
	Table string
	// Model is the model of the row's generation (its fingerprint, or
	// "" when not known).
	Model          string
	Task, SampleID string
	// Setting and Budget are a score's (setting key, "," between its
	// sequences).
	Setting string
	Budget  int
	// Why says what is wrong.
	Why string
	// Regenerate: a rerun generates it again (a generation); otherwise a
	// rescore recomputes it.
	Regenerate bool
	// Restorable: its other copy holds (a key's rows of scores or its
	// digest, whose packed row is sound): a repair restores it exactly.
	Restorable bool
}

// Sound reports whether Check found nothing wrong.
func (r *CheckReport) Sound() bool {
	return r.Schema == "" && len(r.SQLite) == 0 && len(r.Unreadable) == 0 && len(r.Lost) == 0
}

// repair is what a repair does: rows dropped by rowid, keys whose scores
// are dropped, keys whose scores and digest are rewritten from their
// packed rows.
type repair struct {
	dropGenerations, dropPacked []int64
	dropKeys                    []ScoreKey
	restoreKeys                 []ScoreKey
	restoreRows                 map[ScoreKey][]Score
}

// Check checks the SQLite store at path (see above) and reports what it
// found; with repair it mends what can be mended. The error is for a
// check that could not be made (no such file, not SQLite): a damaged
// store is a report.
func Check(ctx context.Context, path string, doRepair bool) (*CheckReport, error) {
	if IsPostgres(path) {
		return nil, fmt.Errorf("tally check reads a SQLite store; a PostgreSQL server checks its own pages (data checksums): %s", Redact(path))
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("check store %s: %w", path, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("store %s is a directory, not a store file", path)
	}
	if err := checkRegular(path); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", aloneDSN(path))
	if err != nil {
		return nil, fmt.Errorf("check store %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(2)
	r := &CheckReport{Store: path}
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&r.Version); err != nil {
		if p := problemFor(path, err); p != "" {
			return nil, &StorageError{Store: path, Problem: p, Err: err}
		}
		return nil, fmt.Errorf("check store %s: %w", path, err)
	}
	c := &checker{r: r, db: db, s: &Store{db: &conn{DB: db}, path: path, readOnly: true, schema: r.Version}}
	if err := c.run(ctx); err != nil {
		return nil, err
	}
	if !doRepair || r.Sound() {
		return r, nil
	}
	if r.Schema != "" || len(r.SQLite) > 0 || len(r.Unreadable) > 0 || r.Version != len(migrations) {
		r.Repaired = "nothing: SQLite finds the file itself damaged, or it is not this tally's store; tally writes into a damaged file never"
		return r, nil
	}
	db.Close()
	if err := c.repair(ctx, path); err != nil {
		return r, err
	}
	return r, nil
}

// checker is one Check.
type checker struct {
	r   *CheckReport
	db  *sql.DB
	s   *Store
	fix repair
	// fps are the generations' fingerprints, by key (for messages).
	fps map[string]string
	// dropped are the keys (as read) whose packed rows were found
	// damaged: their other rows are not reported again.
	dropped map[[32]byte]bool
}

// run makes the checks in turn.
func (c *checker) run(ctx context.Context) error {
	r := c.r
	if err := verifySchema(ctx, c.db, r.Version); err != nil {
		if problemFor(r.Store, err) != "" {
			r.SQLite = append(r.SQLite, err.Error())
		} else {
			r.Schema = strings.TrimPrefix(err.Error(), "not a tally store: ")
		}
		if r.Version == 0 {
			return nil
		}
	}
	problems, err := sqliteCheck(ctx, c.db, "integrity_check", 100)
	if err != nil {
		problems = append(problems, err.Error())
	}
	r.SQLite = append(r.SQLite, c.nameTrees(ctx, problems)...)
	if runs, err := c.s.Models(ctx); err == nil {
		r.models = runs
	}
	c.fps = map[string]string{}
	c.generations(ctx)
	if c.s.hasPackedScores() {
		c.scores(ctx)
	}
	return ctx.Err()
}

// treeRef matches integrity_check's naming of a b-tree by its root page.
var treeRef = regexp.MustCompile(`Tree (\d+) page`)

// nameTrees names, in integrity_check's findings, each b-tree ("Tree 9
// page 45") by its table or index.
func (c *checker) nameTrees(ctx context.Context, problems []string) []string {
	roots := map[string]string{}
	if rows, err := c.db.QueryContext(ctx, `SELECT rootpage, name FROM sqlite_master WHERE rootpage > 0`); err == nil {
		for rows.Next() {
			var root int
			var name string
			if rows.Scan(&root, &name) == nil {
				roots[strconv.Itoa(root)] = name
			}
		}
		rows.Close()
	}
	out := make([]string, len(problems))
	for i, p := range problems {
		out[i] = treeRef.ReplaceAllStringFunc(p, func(m string) string {
			root := treeRef.FindStringSubmatch(m)[1]
			if name, ok := roots[root]; ok {
				return "Tree " + root + " (" + name + ") page"
			}
			return m
		})
	}
	return out
}

// unreadable notes that a read of table stopped at err.
func (c *checker) unreadable(table string, after int64, err error) {
	c.r.Unreadable = append(c.r.Unreadable, fmt.Sprintf("%s: the rows after rowid %d cannot be read: %v", table, after, err))
}

// generations checks every generation's seal.
func (c *checker) generations(ctx context.Context) {
	rows, err := c.db.QueryContext(ctx, `SELECT rowid, `+generationCols+` FROM generations ORDER BY rowid`)
	if err != nil {
		c.unreadable("generations", 0, err)
		return
	}
	defer rows.Close()
	var last int64
	for rows.Next() {
		var g Generation
		var rowid int64
		var text, ids, offs, stops []byte
		var imported int
		if err := rows.Scan(&rowid, &g.Key, &g.Fingerprint, &g.Task, &g.SampleID, &g.PromptTokens, &text, &ids, &offs,
			&g.NTokens, &g.Budget, &g.Finish, &stops, &g.Error, &g.Continued, &imported, &g.GenSeconds, &g.RunID); err != nil {
			c.unreadable("generations", last, err)
			return
		}
		last = rowid
		c.r.Generations++
		c.fps[g.Key] = g.Fingerprint
		if _, _, _, sealed := splitSeal(string(stops)); !sealed {
			c.r.UnsealedGenerations++
			continue
		}
		if _, ok := openStops(&g, text, ids, offs, stops, imported); !ok {
			c.r.Lost = append(c.r.Lost, LostRow{Table: "generations", Model: g.Fingerprint, Task: g.Task, SampleID: g.SampleID,
				Why: "its seal does not match what it holds", Regenerate: true})
			c.fix.dropGenerations = append(c.fix.dropGenerations, rowid)
		}
	}
	if err := rows.Err(); err != nil {
		c.unreadable("generations", last, err)
	}
}

// keyID is a key's SHA-256 (a set of many keys held small).
func keyID(k ScoreKey) [32]byte {
	return sha256.Sum256(appendPackedKey(nil, k, ""))
}

// scores checks every packed row's seal (a row from before seals against
// its rows of scores), then every key's rows of scores and its digest
// against its packed row.
func (c *checker) scores(ctx context.Context) {
	rows, err := c.db.QueryContext(ctx, `SELECT rowid, concat_ws(x'ff', gen_key, sample_id, task, budget, setting_key, digest), scores FROM packed_scores ORDER BY rowid`)
	if err != nil {
		c.unreadable("packed_scores", 0, err)
		return
	}
	// packed are the keys of the sound packed rows: their digests.
	packed := map[[32]byte]string{}
	c.dropped = map[[32]byte]bool{}
	var legacy []legacyRow
	var legacyRowids []int64
	var last int64
	for rows.Next() {
		var rowid int64
		var fields, row []byte
		if err := rows.Scan(&rowid, &fields, &row); err != nil {
			c.unreadable("packed_scores", last, err)
			break
		}
		last = rowid
		c.r.Scores++
		k, digest := packedKeyOf(fields)
		body, sealed, err := openSealed(fields, row)
		if err == nil {
			_, err = unpackedScores(k, body, digest)
		}
		if err != nil {
			c.lostScores(k, "packed_scores", "its seal does not match what it holds", false)
			c.fix.dropPacked = append(c.fix.dropPacked, rowid)
			c.fix.dropKeys = append(c.fix.dropKeys, k)
			c.dropped[keyID(k)] = true
			continue
		}
		if !sealed {
			c.r.UnsealedScores++
			legacy, legacyRowids = append(legacy, legacyRow{k, digest, row}), append(legacyRowids, rowid)
			continue
		}
		packed[keyID(k)] = digest
	}
	rows.Close()
	if len(legacy) > 0 {
		bad, why, err := legacyCheck(ctx, c.db, legacy)
		if err != nil {
			c.unreadable("scores", 0, err)
		}
		isBad := map[ScoreKey]bool{}
		for _, k := range bad {
			isBad[k] = true
			c.lostScores(k, "packed_scores", why+" (a row from before seals: which copy is right is not known)", false)
			c.fix.dropKeys = append(c.fix.dropKeys, k)
			c.dropped[keyID(k)] = true
		}
		for i, l := range legacy {
			if isBad[l.key] {
				c.fix.dropPacked = append(c.fix.dropPacked, legacyRowids[i])
			} else {
				packed[keyID(l.key)] = l.digest
			}
		}
	}
	c.scoreRows(ctx, packed)
	c.digestRows(ctx, packed)
}

// lostScores notes a damaged row of scores of key k.
func (c *checker) lostScores(k ScoreKey, table, why string, restorable bool) {
	c.r.Lost = append(c.r.Lost, LostRow{Table: table, Model: c.fps[k.GenKey], Task: k.Task, SampleID: k.SampleID,
		Setting: strings.ReplaceAll(k.SettingKey, "\x00", ","), Budget: k.Budget, Why: why, Restorable: restorable})
}

// scoreRows checks every key's rows of scores against its packed row,
// read in key order (each key's rows together).
func (c *checker) scoreRows(ctx context.Context, packed map[[32]byte]string) {
	rows, err := c.db.QueryContext(ctx, `SELECT `+packedScoreCols+` FROM scores ORDER BY gen_key, task, sample_id, setting_key, budget`)
	if err != nil {
		c.unreadable("scores", 0, err)
		return
	}
	defer rows.Close()
	var group []Score
	flush := func() {
		if len(group) == 0 {
			return
		}
		k := group[0].Key()
		group = group[:0:0]
		if _, ok := packed[keyID(k)]; ok || c.dropped[keyID(k)] {
			return // compared below, key by key; or its packed row is lost
		}
		c.lostScores(k, "scores", "its rows of scores have no packed row (the copy reports read)", false)
		c.fix.dropKeys = append(c.fix.dropKeys, k)
	}
	for rows.Next() {
		x, err := scanPackedSource(rows)
		if err != nil {
			c.unreadable("scores", 0, err)
			return
		}
		if len(group) > 0 && x.Key() != group[0].Key() {
			flush()
		}
		group = append(group, x)
	}
	flush()
	if err := rows.Err(); err != nil {
		c.unreadable("scores", 0, err)
		return
	}
	// Each sound packed row against its key's rows of scores.
	prows, err := c.db.QueryContext(ctx, `SELECT gen_key, task, sample_id, setting_key, budget, digest, scores FROM packed_scores ORDER BY rowid`)
	if err != nil {
		c.unreadable("packed_scores", 0, err)
		return
	}
	defer prows.Close()
	var batch []legacyRow
	check := func() {
		if len(batch) == 0 {
			return
		}
		bad, why, err := legacyCheck(ctx, c.db, batch)
		if err != nil {
			c.unreadable("scores", 0, err)
		}
		for _, k := range bad {
			for _, l := range batch {
				if l.key == k {
					scores, _ := unpackedScores(l.key, l.packed, l.digest)
					if c.fix.restoreRows == nil {
						c.fix.restoreRows = map[ScoreKey][]Score{}
					}
					c.fix.restoreRows[k] = scores
				}
			}
			c.lostScores(k, "scores", why+" (its packed row holds)", true)
			c.fix.restoreKeys = append(c.fix.restoreKeys, k)
		}
		batch = batch[:0]
	}
	for prows.Next() {
		var l legacyRow
		if err := prows.Scan(&l.key.GenKey, &l.key.Task, &l.key.SampleID, &l.key.SettingKey, &l.key.Budget, &l.digest, &l.packed); err != nil {
			c.unreadable("packed_scores", 0, err)
			return
		}
		if body, sealed, err := openSealedKey(l.key, l.digest, l.packed); err != nil || !sealed {
			continue // found above
		} else {
			l.packed = body
		}
		batch = append(batch, l)
		if len(batch) == 2000 {
			check()
		}
	}
	check()
}

// digestRows checks score_digests against the packed rows' digests.
func (c *checker) digestRows(ctx context.Context, packed map[[32]byte]string) {
	rows, err := c.db.QueryContext(ctx, `SELECT gen_key, task, sample_id, setting_key, budget, digest FROM score_digests`)
	if err != nil {
		c.unreadable("score_digests", 0, err)
		return
	}
	defer rows.Close()
	seen := map[[32]byte]bool{}
	for rows.Next() {
		var k ScoreKey
		var d string
		if err := rows.Scan(&k.GenKey, &k.Task, &k.SampleID, &k.SettingKey, &k.Budget, &d); err != nil {
			c.unreadable("score_digests", 0, err)
			return
		}
		id := keyID(k)
		seen[id] = true
		want, ok := packed[id]
		switch {
		case !ok && c.dropped[id]:
		case !ok:
			c.lostScores(k, "score_digests", "a digest with no packed row of scores", false)
			c.fix.dropKeys = append(c.fix.dropKeys, k)
		case want != d:
			c.lostScores(k, "score_digests", "its digest is not its packed row's", true)
			c.fix.restoreKeys = append(c.fix.restoreKeys, k)
		}
	}
	if err := rows.Err(); err != nil {
		c.unreadable("score_digests", 0, err)
		return
	}
	missing := 0
	for id := range packed {
		if !seen[id] {
			missing++
		}
	}
	if missing > 0 {
		c.r.Lost = append(c.r.Lost, LostRow{Table: "score_digests", Why: fmt.Sprintf("%d packed rows of scores have no digest row", missing), Restorable: true})
	}
}

// repair mends what the check found (see Check), in one transaction.
func (c *checker) repair(ctx context.Context, path string) error {
	s, err := Open(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close()
	f := &c.fix
	err = s.tx(ctx, func(tx *txn) error {
		for _, id := range f.dropGenerations {
			if _, err := tx.ExecContext(ctx, `DELETE FROM generations WHERE rowid=?`, id); err != nil {
				return fmt.Errorf("drop a damaged generation: %w", err)
			}
		}
		for _, id := range f.dropPacked {
			if _, err := tx.ExecContext(ctx, `DELETE FROM packed_scores WHERE rowid=?`, id); err != nil {
				return fmt.Errorf("drop a damaged packed row: %w", err)
			}
		}
		for _, k := range f.dropKeys {
			if err := deleteKeyScores(ctx, tx, k); err != nil {
				return err
			}
		}
		var restore []Score
		for _, k := range f.restoreKeys {
			restore = append(restore, f.restoreRows[k]...)
		}
		// The scores rewritten from their packed rows (which putScores
		// packs again: the same row) and their digests.
		if err := putScores(ctx, tx, restore); err != nil {
			return err
		}
		// Every packed row's digest row, where it lacks one.
		_, err := tx.ExecContext(ctx, `INSERT INTO score_digests(gen_key,task,sample_id,setting_key,budget,digest)
			SELECT gen_key,task,sample_id,setting_key,budget,digest FROM packed_scores WHERE true
			ON CONFLICT(gen_key,task,sample_id,setting_key,budget) DO UPDATE SET digest=excluded.digest`)
		return err
	})
	if err != nil {
		return fmt.Errorf("repair store %s: %w", path, err)
	}
	c.r.Repaired = fmt.Sprintf("dropped %d damaged generations and the scores of %d (sample, setting, budget) keys; restored the scores or digests of %d keys from their packed rows",
		len(f.dropGenerations), len(f.dropKeys), len(f.restoreKeys))
	return nil
}

// Write prints the report: what was checked, what is lost, and what
// brings it back.
func (r *CheckReport) Write(w io.Writer) {
	fmt.Fprintf(w, "store %s: schema version %d; %d generations (%d from before seals), %d packed rows of scores (%d from before seals)\n",
		r.Store, r.Version, r.Generations, r.UnsealedGenerations, r.Scores, r.UnsealedScores)
	if r.Schema != "" {
		fmt.Fprintf(w, "not a tally store: %s\n", r.Schema)
	}
	for _, p := range r.SQLite {
		fmt.Fprintf(w, "SQLite: %s\n", p)
	}
	for _, u := range r.Unreadable {
		fmt.Fprintf(w, "unreadable: %s\n", u)
	}
	type group struct {
		model, task                         string
		generations, scores, restorable, ex int
	}
	groups := map[string]*group{}
	for _, l := range r.Lost {
		model := l.Model
		if m, ok := r.models[model]; ok {
			model = m
		}
		g := groups[model+"\x00"+l.Task]
		if g == nil {
			g = &group{model: model, task: l.Task}
			groups[model+"\x00"+l.Task] = g
		}
		switch {
		case l.Regenerate:
			g.generations++
		case l.Restorable:
			g.restorable++
		default:
			g.scores++
		}
	}
	for i, l := range r.Lost {
		if i == 20 {
			fmt.Fprintf(w, "… %d damaged rows in all\n", len(r.Lost))
			break
		}
		where := l.Task + "/" + l.SampleID
		if !l.Regenerate && l.Table != "generations" {
			where += fmt.Sprintf(" (stop setting %q, budget %d)", l.Setting, l.Budget)
		}
		fmt.Fprintf(w, "damaged: %s row of %s: %s\n", l.Table, where, l.Why)
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		g := groups[key]
		model := g.model
		if model == "" {
			model = "M"
		}
		if g.generations > 0 {
			fmt.Fprintf(w, "lost: %d generations of %s on %s: `tally check --repair` drops them, then `tally rerun --model %s --tasks %s --store %s` generates them again\n",
				g.generations, g.task, model, model, g.task, r.Store)
		}
		if g.scores > 0 {
			fmt.Fprintf(w, "lost: %d scores of %s on %s: `tally check --repair` drops them, then `tally rescore --model %s --tasks %s --store %s` recomputes them from their generations\n",
				g.scores, g.task, model, model, g.task, r.Store)
		}
		if g.restorable > 0 {
			fmt.Fprintf(w, "restorable: %d copies of the scores of %s on %s disagree with their packed rows, which hold: `tally check --repair` restores them\n",
				g.restorable, g.task, model)
		}
	}
	if len(r.SQLite) > 0 || len(r.Unreadable) > 0 {
		fmt.Fprintln(w, "SQLite finds the file itself damaged: what lies on the damaged pages is lost, and tally reads and writes the file no more; "+
			"copy it from a backup, or run the same commands into a new store (`--store NEW.db`): they generate again what is lost")
	}
	switch {
	case r.Repaired != "":
		fmt.Fprintf(w, "repair: %s\n", r.Repaired)
	case r.Sound():
		fmt.Fprintln(w, "sound: nothing damaged")
	}
}

// Err is the error of a store Check found damaged (nil when sound or
// repaired).
func (r *CheckReport) Err() error {
	switch {
	case r.Sound() || strings.HasPrefix(r.Repaired, "dropped"):
		return nil
	case r.Schema != "":
		return errors.New("store " + r.Store + ": not a tally store: " + r.Schema)
	}
	return errors.New("store " + r.Store + " is damaged (see above)")
}

// verifyScores makes Check's checks of the store's scores (every packed
// row's seal, every key's rows of scores against its packed row) and
// returns a *DamagedError naming the first damaged row and how many there
// are: what a copy reads (it copies the rows of scores) must be what the
// store reports, or it would be sealed anew in the copy.
func (s *Store) verifyScores(ctx context.Context) error {
	c := &checker{r: &CheckReport{Store: s.Path()}, db: s.db.DB, s: s, fps: map[string]string{}}
	c.scores(ctx)
	if len(c.r.Unreadable) > 0 {
		return &DamagedError{Store: s.Path(), What: "its scores", Why: c.r.Unreadable[0]}
	}
	var lost []LostRow
	for _, l := range c.r.Lost {
		if l.Table == "packed_scores" || l.Table == "scores" {
			lost = append(lost, l)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	l := lost[0]
	what := fmt.Sprintf("the scores of %s/%s under stop setting %q, budget %d", l.Task, l.SampleID, l.Setting, l.Budget)
	if len(lost) > 1 {
		what += fmt.Sprintf(" (and %d more rows)", len(lost)-1)
	}
	return &DamagedError{Store: s.Path(), What: what, Why: l.Why + "; nothing is copied"}
}
