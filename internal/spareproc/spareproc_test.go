package spareproc

import "testing"

// The count is process-wide, so the test runs alone (not in parallel) and
// checks the change it makes, not an absolute state.
func TestHoldUntilEveryReleaseAndReleaseCountsOnce(t *testing.T) {
	if Held() {
		t.Skip("another holder is running in this process")
	}
	a := Hold()
	b := Hold()
	if !Held() {
		t.Fatal("two holds: Held() = false")
	}
	a()
	a() // a second release of the same hold must not release b's
	if !Held() {
		t.Fatal("one of two holds released (twice): Held() = false, want true")
	}
	b()
	if Held() {
		t.Fatal("every hold released: Held() = true")
	}
}
