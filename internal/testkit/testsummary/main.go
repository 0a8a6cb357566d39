// Command testsummary reads `go test -json` output (test2json events) on
// standard input and prints one line, "LABEL: N passed, M failed", for
// scripts/slurm-versions.sh. It exits 1 when a test failed.
//
// Every test counts once: a test with subtests through its subtests, and
// itself only for a failure of its own. A skipped test counts as failed,
// named on standard error, as does a package that failed without a failing
// test: the matrix exists to run every test against every release.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is the part of a test2json event the count needs.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// Tally is what a run of tests came to.
type Tally struct {
	Passed   int
	Failed   []string // "pkg TestX/sub (skipped)"
	Output   map[string]string
	NonEvent []string // lines that are not events (go build errors)
}

func main() {
	label := flag.String("label", "tests", "what the line is about")
	failures := flag.String("failures", "", "write the output of each failed test to this file")
	flag.Parse()
	t, err := Count(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	for _, f := range t.Failed {
		fmt.Fprintf(os.Stderr, "%s: FAIL %s\n", *label, f)
	}
	if *failures != "" && len(t.Failed) > 0 {
		var b strings.Builder
		for _, f := range t.Failed {
			fmt.Fprintf(&b, "=== %s\n%s\n", f, t.Output[f])
		}
		b.WriteString(strings.Join(t.NonEvent, "\n"))
		if err := os.WriteFile(*failures, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
		} else {
			fmt.Fprintf(os.Stderr, "%s: the failed tests' output is in %s\n", *label, *failures)
		}
	}
	fmt.Printf("%s: %d passed, %d failed\n", *label, t.Passed, len(t.Failed))
	if len(t.Failed) > 0 {
		os.Exit(1)
	}
}

// Count tallies the events read from r.
func Count(r io.Reader) (Tally, error) {
	type key struct{ pkg, test string }
	final := map[key]string{} // pass, fail or skip
	output := map[key]*strings.Builder{}
	pkgFailed := map[string]bool{}
	t := Tally{Output: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			if s := strings.TrimSpace(string(line)); s != "" {
				t.NonEvent = append(t.NonEvent, s)
			}
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "pass", "fail", "skip":
			if e.Test == "" {
				if e.Action == "fail" {
					pkgFailed[e.Package] = true
				}
				continue
			}
			final[k] = e.Action
		case "output":
			if output[k] == nil {
				output[k] = &strings.Builder{}
			}
			output[k].WriteString(e.Output)
		}
	}
	if err := sc.Err(); err != nil {
		return t, err
	}

	keys := make([]key, 0, len(final))
	for k := range final {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].pkg < keys[j].pkg || keys[i].pkg == keys[j].pkg && keys[i].test < keys[j].test
	})
	hasSub := map[key]bool{}
	subFailed := map[key]bool{}
	for _, k := range keys {
		for parent := k.test; strings.Contains(parent, "/"); {
			parent = parent[:strings.LastIndex(parent, "/")]
			hasSub[key{k.pkg, parent}] = true
			if final[k] != "pass" {
				subFailed[key{k.pkg, parent}] = true
			}
		}
	}
	failedIn := map[string]bool{}
	fail := func(k key, why string) {
		name := k.pkg + " " + k.test + why
		t.Failed = append(t.Failed, name)
		if o := output[k]; o != nil {
			t.Output[name] = o.String()
		}
		failedIn[k.pkg] = true
	}
	for _, k := range keys {
		switch {
		case hasSub[k] && (final[k] == "pass" || subFailed[k]):
			// counted through its subtests
		case final[k] == "pass":
			t.Passed++
		case final[k] == "skip":
			fail(k, " (skipped)")
		default:
			fail(k, "")
		}
	}
	pkgs := make([]string, 0, len(pkgFailed))
	for p := range pkgFailed {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		if !failedIn[p] {
			fail(key{p, ""}, "(the package failed: build, TestMain or a panic)")
		}
	}
	return t, nil
}
