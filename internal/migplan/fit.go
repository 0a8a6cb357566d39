package migplan

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/slurm-mig/slurm-mig/internal/model"
)

// request is one profile of an entry's mig-devices, resolved on a GPU: the
// GPU-instance profile it is made in, and the compute-instance profile it
// is (the GI's whole, or a part such as 1c.3g.40gb).
type request struct {
	name  string // as the config names it, which is what refusals say
	count int
	gi    *model.GIProfile
	ci    model.CIProfile // whose name is the MIG device's
}

// Unfit is why a GPU cannot hold a layout: the profile it concerns and
// what is wrong with it.
type Unfit struct {
	Profile string
	Reason  string
}

func (u *Unfit) Error() string { return u.Profile + ": " + u.Reason }

// splitProfile cuts a mig-parted profile name into compute slices and GI
// profile: "1c.3g.40gb" is 1 and "3g.40gb"; "3g.40gb" is 0 (all the GI's)
// and itself. MigConfig.AssertValidFormat has checked the form already.
func splitProfile(name string) (ci int, gi string, err error) {
	first, rest, _ := strings.Cut(name, ".")
	if !strings.HasSuffix(first, "c") {
		return 0, name, nil
	}
	n, err := strconv.Atoi(strings.TrimSuffix(first, "c"))
	if err != nil || n <= 0 {
		return 0, "", fmt.Errorf("malformed compute slices %q", first)
	}
	return n, rest, nil
}

// resolve finds each profile asked for (count > 0) in the GPU's profile
// table, as mig-parted does when it applies a config, and refuses (*Unfit) a
// name the GPU lacks: mig-parted would fail, or make nothing yet succeed.
func resolve(g *model.GPU, devices map[string]int) ([]request, error) {
	names := make([]string, 0, len(devices))
	for name, n := range devices {
		if n > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var reqs []request
	for _, name := range names {
		slices, giName, err := splitProfile(name)
		if err != nil {
			return nil, &Unfit{Profile: name, Reason: err.Error()}
		}
		gi := giProfile(g, giName)
		if gi == nil {
			return nil, &Unfit{Profile: name, Reason: "this GPU has no such profile (it has " + profileNames(g) + ")"}
		}
		if slices == 0 {
			slices = gi.Slices
		}
		ci, ok := ciProfile(gi, slices)
		if !ok {
			return nil, &Unfit{Profile: name, Reason: fmt.Sprintf("a %s GPU instance has no compute instance of %d slices", gi.Name, slices)}
		}
		reqs = append(reqs, request{name: name, count: devices[name], gi: gi, ci: ci})
	}
	return reqs, nil
}

// unread refuses a name with a count of 0 that no GPU of the node has:
// mig-parted looks up every name of an entry, zeros included, and where one
// is on no GPU it drops the whole entry yet reports success.
func unread(node *model.Node, devices map[string]int) error {
	var names []string
	for name, n := range devices {
		if n == 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if !onNode(node, name) {
			return &Unfit{Profile: name, Reason: "no GPU of the node has such a profile, and then mig-parted makes no MIG device on this one, whatever the count (0 here)"}
		}
	}
	return nil
}

// onNode reports whether a GPU of node offers the profile name.
func onNode(node *model.Node, name string) bool {
	for i := range node.GPUs {
		if _, err := resolve(&node.GPUs[i], map[string]int{name: 1}); err == nil {
			return true
		}
	}
	return false
}

func giProfile(g *model.GPU, name string) *model.GIProfile {
	if g.Profiles == nil {
		return nil
	}
	return g.Profiles.Find(name)
}

// ciProfile is the GI profile's compute-instance profile of so many
// slices. A table without compute-instance profiles still has the one
// that takes the whole GI: every GI profile is its own CI.
func ciProfile(gi *model.GIProfile, slices int) (model.CIProfile, bool) {
	for _, ci := range gi.CIProfiles {
		if ci.Slices == slices {
			return ci, true
		}
	}
	if slices == gi.Slices {
		return model.CIProfile{Name: gi.Name, Slices: slices, Instances: 1}, true
	}
	return model.CIProfile{}, false
}

func profileNames(g *model.GPU) string {
	names := make([]string, len(g.MigProfiles()))
	for i, p := range g.MigProfiles() {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// fit decides whether the GPU can hold the requested MIG devices. As
// mig-parted fills its last GI before it makes another, trying every order,
// they fit if the fewest GIs holding the CIs can be placed without overlap.
func fit(reqs []request) error {
	var gis []*model.GIProfile // one per GPU instance to place
	for _, gi := range giOrder(reqs) {
		var items []request
		for _, r := range reqs {
			if r.gi == gi {
				items = append(items, r)
			}
		}
		n, err := pack(gi, items)
		if err != nil {
			return err
		}
		if n > gi.Instances {
			return &Unfit{Profile: layoutName(items), Reason: fmt.Sprintf("needs %d %s GPU instances, and the GPU holds at most %d", n, gi.Name, gi.Instances)}
		}
		for range n {
			gis = append(gis, gi)
		}
	}
	if !place(gis, 0, 0, -1) {
		return &Unfit{Profile: layoutName(reqs), Reason: "no set of placements without overlap holds them all"}
	}
	return nil
}

// giOrder is the GI profiles of reqs, once each, largest first.
func giOrder(reqs []request) []*model.GIProfile {
	var out []*model.GIProfile
	for _, r := range reqs {
		if !containsGI(out, r.gi) {
			out = append(out, r.gi)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Slices > out[b].Slices })
	return out
}

func containsGI(list []*model.GIProfile, gi *model.GIProfile) bool {
	for _, g := range list {
		if g == gi {
			return true
		}
	}
	return false
}

// layoutName says a layout as "4g.40gb + 2g.20gb + 2x1g.10gb": the
// largest GI profiles first, and in each the largest compute instances.
func layoutName(reqs []request) string {
	sorted := append([]request(nil), reqs...)
	sort.SliceStable(sorted, func(a, b int) bool {
		if sorted[a].gi.Slices != sorted[b].gi.Slices {
			return sorted[a].gi.Slices > sorted[b].gi.Slices
		}
		return sorted[a].ci.Slices > sorted[b].ci.Slices
	})
	parts := make([]string, len(sorted))
	for i, r := range sorted {
		parts[i] = r.name
		if r.count > 1 {
			parts[i] = strconv.Itoa(r.count) + "x" + r.name
		}
	}
	return strings.Join(parts, " + ")
}

// pack is the fewest GIs of profile gi that hold the CIs items ask for, each
// GI up to its compute slices and each CI profile's instance count; exact,
// as mig-parted tries every order. Of a CI the table gives only its slices.
func pack(gi *model.GIProfile, items []request) (int, error) {
	var sizes []int // one per compute instance, largest first
	total := 0
	for _, r := range items {
		if r.count > r.gi.Instances*r.ci.Instances {
			return 0, &Unfit{Profile: r.name, Reason: fmt.Sprintf("%d asked, and the GPU holds at most %d", r.count, r.gi.Instances*r.ci.Instances)}
		}
		for range r.count {
			sizes = append(sizes, r.ci.Slices)
		}
		total += r.count * r.ci.Slices
	}
	if total > gi.Instances*gi.Slices {
		return 0, &Unfit{Profile: layoutName(items), Reason: fmt.Sprintf("takes %d compute slices, and %d %s GPU instances have %d", total, gi.Instances, gi.Name, gi.Instances*gi.Slices)}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(sizes)))
	limit := map[int]int{}
	for _, r := range items {
		limit[r.ci.Slices] = r.ci.Instances
	}
	best := len(sizes) + 1
	var bins []map[int]int // CIs of each size in each GI
	var free []int
	var search func(i int)
	search = func(i int) {
		if len(bins) >= best {
			return
		}
		if i == len(sizes) {
			best = len(bins)
			return
		}
		s := sizes[i]
		seen := map[int]bool{} // GIs with the same room are the same choice
		for b := range bins {
			if free[b] < s || bins[b][s] >= limit[s] || seen[free[b]] {
				continue
			}
			seen[free[b]] = true
			free[b] -= s
			bins[b][s]++
			search(i + 1)
			bins[b][s]--
			free[b] += s
		}
		bins = append(bins, map[int]int{s: 1})
		free = append(free, gi.Slices-s)
		search(i + 1)
		bins, free = bins[:len(bins)-1], free[:len(free)-1]
	}
	search(0)
	return best, nil
}

// place reports whether the GIs from the i-th on get placements overlapping
// neither each other nor used (a mask of memory slices). Each GI of one
// profile goes after from, the one before's, so no set is tried twice.
func place(gis []*model.GIProfile, i int, used uint64, from int) bool {
	if i == len(gis) {
		return true
	}
	gi := gis[i]
	start := 0
	if i > 0 && gis[i-1] == gi {
		start = from + 1
	}
	for p := start; p < len(gi.Placements); p++ {
		pl := gi.Placements[p]
		if pl.Size <= 0 || pl.Start < 0 || pl.Start+pl.Size > 64 {
			continue
		}
		mask := (uint64(1)<<pl.Size - 1) << pl.Start
		if used&mask != 0 {
			continue
		}
		if place(gis, i+1, used|mask, p) {
			return true
		}
	}
	return false
}
