package bolt

import bbolt "go.etcd.io/bbolt"

// PageBytes is how many bytes of pages the store's write transactions have written.
func (s *Store) PageBytes() int64 {
	st := s.db.Stats()
	return st.TxStats.GetPageAlloc()
}

// DecisionBytes is how many bytes of pages the decision log's bucket takes.
func (s *Store) DecisionBytes() (n int) {
	s.db.View(func(tx *bbolt.Tx) error {
		st := tx.Bucket(bucketDecisions).Stats()
		n = st.BranchAlloc + st.LeafAlloc
		return nil
	})
	return n
}
