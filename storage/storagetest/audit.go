package storagetest

import "testing"

// testAudit covers what the audit trail and the decision log need of a store.
func testAudit(t *testing.T, open opener) {
	t.Run("Changes", func(t *testing.T) { testChanges(t, open) })
	t.Run("Events", func(t *testing.T) { testEvents(t, open) })
	t.Run("Decisions", func(t *testing.T) { testDecisions(t, open) })
}
