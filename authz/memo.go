package authz

import (
	"hash/maphash"
	"sync"
)

// memo remembers a policy's answers by their key: exactly what the rule read of the question's
// input (appendKey). An answer found under a key is the one the rule gives any input of that
// key, whoever and whenever it is about, so nothing a write changes ever makes it stale: a
// changed fact makes another key. One memo serves one policy revision and one rule.
//
// It holds about maxBytes of keys; a shard that fills is emptied and fills again.
type memo struct {
	seed     maphash.Seed
	perShard int // bytes of keys a shard holds
	shards   [memoShards]memoShard
}

const memoShards = 32

type memoShard struct {
	mu      sync.RWMutex
	answers map[string]bool
	bytes   int
}

// memoEntryOverhead is about what a map entry costs beside its key's bytes.
const memoEntryOverhead = 64

func newMemo(maxBytes int) *memo {
	m := &memo{seed: maphash.MakeSeed(), perShard: maxBytes / memoShards}
	for i := range m.shards {
		m.shards[i].answers = map[string]bool{}
	}
	return m
}

func (m *memo) shard(k []byte) *memoShard {
	return &m.shards[maphash.Bytes(m.seed, k)%memoShards]
}

// get returns the answer remembered under k.
func (m *memo) get(k []byte) (allowed, ok bool) {
	sh := m.shard(k)
	sh.mu.RLock()
	allowed, ok = sh.answers[string(k)]
	sh.mu.RUnlock()
	return allowed, ok
}

// put remembers allowed under k.
func (m *memo) put(k []byte, allowed bool) {
	cost := len(k) + memoEntryOverhead
	if cost > m.perShard {
		return
	}
	sh := m.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.bytes+cost > m.perShard {
		clear(sh.answers)
		sh.bytes = 0
	}
	if _, ok := sh.answers[string(k)]; !ok {
		sh.bytes += cost
	}
	sh.answers[string(k)] = allowed
}

// len is how many answers are remembered.
func (m *memo) len() int {
	n := 0
	for i := range m.shards {
		m.shards[i].mu.RLock()
		n += len(m.shards[i].answers)
		m.shards[i].mu.RUnlock()
	}
	return n
}
