package tasks

import (
	"os"
	"testing"
	"time"
)

// A task's record names the host it runs on, and its lease is renewed by
// heartbeats, on the store's clock.
func TestTaskHostAndLease(t *testing.T) {
	s, clock, _ := newTestTaskStore(t)
	s.Host = "host-a"
	task := mustCreateTask(t, s, "20261121_020734_aaaaaa", "a")
	if task.Host != "host-a" || !s.Local(task) {
		t.Fatalf("created on %q, local %v", task.Host, s.Local(task))
	}
	if got, _ := s.Get(task.ID); got.Host != "host-a" {
		t.Fatalf("stored host %q", got.Host)
	}
	if !s.LeaseHeld(task.ID) {
		t.Fatal("a new task holds no lease")
	}
	clock.Advance(Lease)
	if !s.LeaseHeld(task.ID) {
		t.Fatal("the lease ended before its time")
	}
	clock.Advance(time.Second)
	if s.LeaseHeld(task.ID) {
		t.Fatal("the lease outlived its time")
	}
	if err := s.Heartbeat(task.ID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(Lease)
	if !s.LeaseHeld(task.ID) {
		t.Fatal("a heartbeat did not renew the lease")
	}
	mustFinishTask(t, s, task.ID, Succeeded, intp(0))
	if err := s.Heartbeat(task.ID); err != nil || s.LeaseHeld(task.ID) {
		t.Fatalf("heartbeat of a finished task: %v, lease %v", err, s.LeaseHeld(task.ID))
	}

	// Another host's task, and one written before hosts were recorded.
	other, err := s.Create(Task{ID: "20261121_020734_bbbbbb", Command: []string{"true"}, Host: "host-b"})
	if err != nil || other.Host != "host-b" || s.Local(other) {
		t.Fatalf("create on another host: %+v %v, local %v", other, err, s.Local(other))
	}
	if !s.Local(Task{ID: "old"}) {
		t.Fatal("a record without a host is not taken to run here")
	}
}

// A heartbeat writes no byte of the record.
func TestTaskHeartbeatLeavesRecord(t *testing.T) {
	s, clock, _ := newTestTaskStore(t)
	task := mustCreateTask(t, s, "20261121_020734_aaaaaa", "a")
	before, err := os.ReadFile(s.docPath(task.ID))
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(HeartbeatEvery)
	if err := s.Heartbeat(task.ID); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(s.docPath(task.ID)); string(after) != string(before) {
		t.Fatalf("record changed:\n%s\n%s", before, after)
	}
}

// BenchmarkHeartbeat is the cost of one heartbeat of a running task.
func BenchmarkHeartbeat(b *testing.B) {
	s, clock, _ := newTestTaskStore(b)
	task := mustCreateTask(b, s, "20261121_020734_aaaaaa", "a")
	b.ResetTimer()
	for range b.N {
		clock.Advance(time.Millisecond)
		if err := s.Heartbeat(task.ID); err != nil {
			b.Fatal(err)
		}
	}
}
