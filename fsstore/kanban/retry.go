package kanban

import (
	"fmt"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// A run that ends crashed, protocol_violation or reclaimed is a failure:
// the task is ready again after a backoff (retry_backoff_ms, judged by
// each host's own clock from when it saw the retry, lease.go; not_before
// is the failing host's reading, for people), until its
// failures in a row reach the limit, the task's max_retries plus one, else
// the board's FailureLimit. Then it is blocked, given up (a gave_up event,
// a block reason that names the failed runs), and a person's unblock
// starts the count again. A run that completes or blocks ends the row.
// The failure, the retry or the giving up are one change of the task.

// Defaults of the board's retry policy (kanban.failure_limit and
// kanban.retry_backoff in config.yaml).
const (
	DefaultFailureLimit = 3
	DefaultRetryBackoff = 30 * time.Second
	// maxRetryBackoff bounds the doubling.
	maxRetryBackoff = time.Hour
)

// failureLimit is how many failed runs in a row give task t up.
func (b *Board) failureLimit(t *Task) int {
	if t.MaxRetries != nil {
		return *t.MaxRetries + 1
	}
	if b.FailureLimit > 0 {
		return b.FailureLimit
	}
	return DefaultFailureLimit
}

// Backoff is the wait before the retry that follows the n-th failure in a
// row: RetryBackoff, doubled for each failure after the first.
func (b *Board) Backoff(n int) time.Duration {
	d := b.RetryBackoff
	for i := 1; i < n && d < maxRetryBackoff; i++ {
		d *= 2
	}
	return min(d, maxRetryBackoff)
}

// retryOrGiveUp counts the failure ev records (its run has ended) and
// makes task t ready after a backoff, or blocks it given up. It returns
// the change's events.
func (b *Board) retryOrGiveUp(t *Task, ev Event, now time.Time) []Event {
	t.Failures++
	limit := b.failureLimit(t)
	if t.Failures < limit {
		backoff := b.Backoff(t.Failures)
		t.Status, t.BlockReason, t.NotBefore = Ready, "", fsstore.TimeOf(now.Add(backoff))
		t.RetryBackoffMS = backoff.Milliseconds()
		ev.Detail += fmt.Sprintf("; retry %d of %d at %s", t.Failures, limit-1, t.NotBefore)
		return []Event{ev}
	}
	var runs []string
	for i := len(t.Runs) - 1; i >= 0 && len(runs) < t.Failures; i-- {
		runs = append([]string{t.Runs[i].ID}, runs...)
	}
	why := fmt.Sprintf("gave_up: %d failed %s in a row (%s); the last: %s: %s",
		t.Failures, plural(t.Failures, "run", "runs"), strings.Join(runs, ", "), ev.Type, ev.Detail)
	t.Status, t.BlockReason, t.NotBefore = Blocked, why, ""
	return []Event{ev, {Type: EventGaveUp, RunID: ev.RunID, Detail: why}}
}
