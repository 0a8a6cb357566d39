package model

import "testing"

func TestValidProfile(t *testing.T) {
	for _, ok := range []string{"1g.5gb", "1c.3g.40gb", "1g.10gb+me", "1g.10gb-me", "1g.23gb+me.all", "7g.80gb", "1g.10gb+gfx"} {
		if err := ValidProfile(ok); err != nil {
			t.Errorf("ValidProfile(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1g", "g.5gb", "1g.5", "1g.5gb+", "1g.5gb+me,gfx", "1g.5gb+ME", "1x.1g.5gb", "1g.5gb+.me", "a100", "1g.5gb:2", "1g.5gb+me gfx"} {
		if ValidProfile(bad) == nil {
			t.Errorf("ValidProfile(%q) accepted", bad)
		}
	}
}
