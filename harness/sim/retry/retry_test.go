package retry

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

func TestQueue(t *testing.T) {
	errDown := errors.New("connection refused")
	tests := map[string]struct {
		// failures is how many times each write fails before it succeeds.
		failures map[string]int
		// writes are done in order, key then value written.
		writes [][2]string
		want   map[string]string
	}{
		"a write that succeeds is done at once": {
			writes: [][2]string{{"a", "1"}},
			want:   map[string]string{"a": "1"},
		},
		"a failed write is retried until it succeeds": {
			failures: map[string]int{"1": 3},
			writes:   [][2]string{{"a", "1"}},
			want:     map[string]string{"a": "1"},
		},
		"a later write under the same key replaces a pending one": {
			failures: map[string]int{"1": 1000},
			writes:   [][2]string{{"a", "1"}, {"a", "2"}},
			want:     map[string]string{"a": "2"},
		},
		"keys are independent": {
			failures: map[string]int{"1": 2, "2": 1},
			writes:   [][2]string{{"a", "1"}, {"b", "2"}},
			want:     map[string]string{"a": "1", "b": "2"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			q := New(time.Millisecond)
			var mu sync.Mutex
			got, tries := map[string]string{}, map[string]int{}
			for _, w := range tc.writes {
				key, value := w[0], w[1]
				q.Do(ctx, key, func(context.Context) error {
					mu.Lock()
					defer mu.Unlock()
					tries[value]++
					if tries[value] <= tc.failures[value] {
						return errDown
					}
					got[key] = value
					return nil
				})
			}
			go q.Run(ctx)
			if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				mu.Lock()
				defer mu.Unlock()
				return len(got) == len(tc.want) && q.Len() == 0, nil
			}); err != nil {
				t.Fatalf("writes not through: got %v, %d pending", got, q.Len())
			}
			mu.Lock()
			defer mu.Unlock()
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("key %s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}
