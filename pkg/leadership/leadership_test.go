package leadership

import (
	"context"
	"errors"
	"testing"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a resource lock whose writes succeed unless fail is set.
type fakeLock struct {
	resourcelock.Interface
	identity string
	fail     bool
}

func (f *fakeLock) Identity() string { return f.identity }
func (f *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	if f.fail {
		return errors.New("conflict")
	}
	return nil
}
func (f *fakeLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return f.Create(ctx, ler)
}

func TestObserve(t *testing.T) {
	tests := map[string]struct {
		holder   string
		fail     bool
		create   bool
		wantLead bool
	}{
		"acquired by create":              {holder: "me", create: true, wantLead: true},
		"acquired or renewed by update":   {holder: "me", wantLead: true},
		"write rejected: another leads":   {holder: "me", fail: true},
		"release writes an empty holder":  {holder: ""},
		"a record naming another replica": {holder: "other"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l := New()
			lock := l.Observe(&fakeLock{identity: "me", fail: tc.fail})
			ler := resourcelock.LeaderElectionRecord{HolderIdentity: tc.holder}
			var err error
			if tc.create {
				err = lock.Create(context.Background(), ler)
			} else {
				err = lock.Update(context.Background(), ler)
			}
			if (err != nil) != tc.fail {
				t.Fatalf("write error = %v, want failure %v (errors pass through)", err, tc.fail)
			}
			if got := l.IsLeader(); got != tc.wantLead {
				t.Errorf("IsLeader() = %v, want %v", got, tc.wantLead)
			}
		})
	}
}

func TestLeadOnlyTurnsOn(t *testing.T) {
	var l Leadership
	if l.IsLeader() {
		t.Fatal("the zero value leads")
	}
	select {
	case <-l.Elected():
		t.Fatal("Elected closed before Lead")
	default:
	}
	l.Lead()
	l.Lead()
	<-l.Elected()
	if !l.IsLeader() || !Leading().IsLeader() {
		t.Error("IsLeader() = false after Lead")
	}
}
