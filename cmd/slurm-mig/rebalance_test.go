package main

import (
	"strings"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/rebalance"
)

// A held node's hint is said after its reason, in the text and in the
// JSON's "why" alike; nodes of one reason and hint share a line.
func TestProposalSaysTheHeldHintAfterTheReason(t *testing.T) {
	p := proposal{&rebalance.Proposal{Changes: []rebalance.Change{}, Unserved: []string{}, Held: []rebalance.Held{
		{Node: "gpu03", Why: "its Gres=gpu:a100:1 is no layout of the GPUs of h100.json", Hint: ": give the node's own snapshot"},
		{Node: "gpu04", Why: "its Gres=gpu:a100:1 is no layout of the GPUs of h100.json", Hint: ": give the node's own snapshot"},
		{Node: "gpu05", Why: "state IDLE+DRAIN"},
	}}, time.Minute}
	var text strings.Builder
	if err := p.writeWhy(&text); err != nil {
		t.Fatal(err)
	}
	want := "held gpu[03-04]: its Gres=gpu:a100:1 is no layout of the GPUs of h100.json: give the node's own snapshot\nheld gpu05: state IDLE+DRAIN\n"
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
	if p.Held[0].Why != "its Gres=gpu:a100:1 is no layout of the GPUs of h100.json" {
		t.Errorf("WriteJSON changed the proposal: %+v", p.Held[0])
	}
}
