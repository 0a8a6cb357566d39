package main

import (
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/rebalance"
)

// A held node's hint is said after its reason, in the text and in the
// JSON's "why" alike; nodes of one reason and hint share a line. So is a
// refused config's.
func TestProposalSaysTheHeldHintAfterTheReason(t *testing.T) {
	p := proposal{&rebalance.Proposal{Changes: []rebalance.Change{}, Unserved: []string{}, Held: []rebalance.Held{
		{Node: "gpu03", Why: "its Gres=gpu:a100:1 is no layout of the GPUs of h100.json", Hint: ": give the node's own snapshot"},
		{Node: "gpu04", Why: "its Gres=gpu:a100:1 is no layout of the GPUs of h100.json", Hint: ": give the node's own snapshot"},
		{Node: "gpu05", Why: "state IDLE+DRAIN"},
	}}, time.Minute, []rebalance.Refusal{
		{Config: "half", Nodes: []string{"gpu01", "gpu02"}, Why: "it leaves GPU 1 (NVIDIA H100 80GB HBM3) as it is, so its counts are each node's own", Hint: "; give the node's own snapshot"},
	}}
	var text strings.Builder
	if err := p.writeWhy(&text); err != nil {
		t.Fatal(err)
	}
	want := "held gpu[03-04]: its Gres=gpu:a100:1 is no layout of the GPUs of h100.json: give the node's own snapshot\nheld gpu05: state IDLE+DRAIN\n" +
		"config half refused for gpu[01-02]: it leaves GPU 1 (NVIDIA H100 80GB HBM3) as it is, so its counts are each node's own; give the node's own snapshot\n"
	if text.String() != want {
		t.Errorf("text %q\nwant %q", text.String(), want)
	}
	var js strings.Builder
	if err := p.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if want := `"why": "its Gres=gpu:a100:1 is no layout of the GPUs of h100.json: give the node's own snapshot"`; strings.Count(js.String(), want) != 2 || strings.Contains(js.String(), `"hint"`) {
		t.Errorf("JSON %s\nwant %s twice, and no hint field", js.String(), want)
	}
	if want := `"why": "it leaves GPU 1 (NVIDIA H100 80GB HBM3) as it is, so its counts are each node's own; give the node's own snapshot"`; !strings.Contains(js.String(), want) {
		t.Errorf("JSON %s\nwant %s", js.String(), want)
	}
	if p.Held[0].Why != "its Gres=gpu:a100:1 is no layout of the GPUs of h100.json" || p.refused[0].Hint == "" {
		t.Errorf("WriteJSON changed the proposal: %+v %+v", p.Held[0], p.refused[0])
	}
}
