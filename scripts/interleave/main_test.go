package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		args string
		want [][]string
	}{
		{"a x ::: b", [][]string{{"a", "x"}, {"b"}}},
		{"a ::: b y ::: c", [][]string{{"a"}, {"b", "y"}, {"c"}}},
		{"a", [][]string{{"a"}}},
		{"::: b", nil},
		{"a :::", nil},
		{"a ::: ::: b", nil},
	} {
		if got := split(strings.Fields(tc.args)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("split(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// Each round starts with the next command, and the warm-up rounds are run
// but not kept.
func TestRotate(t *testing.T) {
	var order []string
	cost := map[string]time.Duration{"a": time.Second, "b": 2 * time.Second, "c": 3 * time.Second}
	times, err := rotate([][]string{{"a"}, {"b"}, {"c"}}, 1, 2, func(argv []string) (time.Duration, error) {
		order = append(order, argv[0])
		return cost[argv[0]], nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(order, ""), "abcbcacab"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
	if want := [][]float64{{1, 1}, {2, 2}, {3, 3}}; !reflect.DeepEqual(times, want) {
		t.Errorf("times %v, want %v", times, want)
	}
}

func TestRotateStopsAtAFailure(t *testing.T) {
	runs := 0
	_, err := rotate([][]string{{"a"}, {"b", "x"}}, 0, 5, func(argv []string) (time.Duration, error) {
		runs++
		if argv[0] == "b" {
			return 0, errors.New("exit status 1")
		}
		return time.Millisecond, nil
	})
	if err == nil || err.Error() != "b x: exit status 1" || runs != 2 {
		t.Errorf("err %v after %d runs, want \"b x: exit status 1\" after 2", err, runs)
	}
}

func TestMedian(t *testing.T) {
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median of 3 1 2 = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of 4 1 3 2 = %v", got)
	}
}
