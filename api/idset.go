package api

import (
	"hash/maphash"
	"math/bits"
	"unsafe"
)

// idSet is a set of ids whose membership test touches few cache lines: one slot, which holds
// part of the id's hash beside where its bytes are, then those bytes. A user's set is asked
// about once a check, and under make bench's load it is one of 10,000 and cold when asked; a
// map's lookup first goes through the map's header, directory, table and group, and
// permittedSet.has took 2.4% of a loaded server's samples that way.
//
// A slot is 16 bytes, the id's string header with its length in 32 bits and half the hash in
// the other 32, so that the set takes no more memory than the map did: slots of 24 bytes (the
// hash beside the id as a string), in a power-of-two table, made a cached user of
// BenchmarkCachedUserMemory 6,320–6,336 bytes against 4,985 with the map, and slots of 8 bytes
// indexing a slice of the ids cost a third cache line a lookup (idSet.find: 1.3% of the
// samples against 0.8% in this form, one profile each).
type idSet struct {
	// slots finds the ids by open addressing with linear probing; there are twice as many as
	// ids, so that a probe soon meets an empty slot (a nil data).
	slots []idSlot
}

type idSlot struct {
	data *byte  // the id's bytes (unsafe.StringData), which the slot keeps alive
	n    uint32 // the id's length
	tag  uint32 // the top half of the id's hash
}

// idSeed seeds the hash of every idSet of the process: a client cannot choose ids that collide.
var idSeed = maphash.MakeSeed()

// maxSetID bounds the length of an id an idSet holds: a slot keeps the length in 32 bits.
const maxSetID = 1<<32 - 1

// newIDSet returns the set of ids; repeats are kept once. An id longer than maxSetID, or
// empty, is left out.
func newIDSet(ids []string) idSet {
	s := idSet{slots: make([]idSlot, max(2*len(ids), 1))}
	for _, id := range ids {
		if len(id) == 0 || uint64(len(id)) > maxSetID {
			continue
		}
		h := maphash.String(idSeed, id)
		if i, found := s.find(id, h); !found {
			s.slots[i] = idSlot{data: unsafe.StringData(id), n: uint32(len(id)), tag: uint32(h >> 32)}
		}
	}
	return s
}

// has reports whether id is in the set.
func (s idSet) has(id string) bool {
	_, found := s.find(id, maphash.String(idSeed, id))
	return found
}

// find returns the slot of id, whose hash is h, and whether id is there; if not, the empty
// slot where it would go. The first slot probed is the hash scaled to the table (the high half
// of h × slots).
func (s idSet) find(id string, h uint64) (int, bool) {
	tag := uint32(h >> 32)
	i, _ := bits.Mul64(h, uint64(len(s.slots)))
	for {
		sl := &s.slots[i]
		if sl.data == nil {
			return int(i), false
		}
		if sl.tag == tag && int(sl.n) == len(id) && unsafe.String(sl.data, sl.n) == id {
			return int(i), true
		}
		if i++; i == uint64(len(s.slots)) {
			i = 0
		}
	}
}
