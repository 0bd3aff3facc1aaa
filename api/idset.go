package api

import "hash/maphash"

// idSet is a set of ids whose membership test touches few cache lines: the slot with the id's
// hash and string header, then the id's bytes. A user's set is asked about once a check, and
// under make bench's load it is one of 10,000 and cold when asked; a map's lookup first goes
// through the map's header, directory, table and group, and permittedSet.has took 2.4% of a
// loaded server's samples that way.
type idSet struct {
	// slots holds the ids by open addressing with linear probing. Its length is a power of two
	// and at least twice the ids, so that a probe soon meets an empty slot (hash 0).
	slots []idSlot
}

type idSlot struct {
	hash uint64
	id   string
}

// idSeed seeds the hash of every idSet of the process: a client cannot choose ids that collide.
var idSeed = maphash.MakeSeed()

// idHash is id's hash in an idSet, never 0 (an empty slot).
func idHash(id string) uint64 {
	return max(maphash.String(idSeed, id), 1)
}

// newIDSet returns the set of ids; repeats are kept once.
func newIDSet(ids []string) idSet {
	n := 2
	for n < 2*len(ids) {
		n *= 2
	}
	s := idSet{slots: make([]idSlot, n)}
	for _, id := range ids {
		s.add(id)
	}
	return s
}

// add puts id in the set. It must not be called once the set is shared.
func (s idSet) add(id string) {
	h := idHash(id)
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &s.slots[i]
		if sl.hash == 0 {
			sl.hash, sl.id = h, id
			return
		}
		if sl.hash == h && sl.id == id {
			return
		}
	}
}

// has reports whether id is in the set.
func (s idSet) has(id string) bool {
	h := idHash(id)
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &s.slots[i]
		if sl.hash == 0 {
			return false
		}
		if sl.hash == h && sl.id == id {
			return true
		}
	}
}
