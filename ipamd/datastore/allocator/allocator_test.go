package allocator

import (
	"net/netip"
	"testing"
)

func block(first, last string, exclude ...string) Block {
	b := Block{First: netip.MustParseAddr(first), Last: netip.MustParseAddr(last), Exclude: map[netip.Addr]struct{}{}}
	for _, ip := range exclude {
		b.Exclude[netip.MustParseAddr(ip)] = struct{}{}
	}
	return b
}

func TestPick(t *testing.T) {
	two := []Block{block("198.18.0.1", "198.18.0.3"), block("198.18.1.10", "198.18.1.11", "198.18.1.10")}
	for _, tc := range []struct {
		name   string
		blocks []Block
		cursor string
		taken  []string
		want   string // "" means exhausted
		block  int
	}{
		{name: "no cursor: the first address", blocks: two, want: "198.18.0.1"},
		{name: "walks on from the cursor", blocks: two, cursor: "198.18.0.1", want: "198.18.0.2"},
		{name: "skips taken addresses", blocks: two, cursor: "198.18.0.1", taken: []string{"198.18.0.2"}, want: "198.18.0.3"},
		{name: "into the next block, past its excluded address", blocks: two, cursor: "198.18.0.3", want: "198.18.1.11", block: 1},
		{name: "a cursor between blocks starts the next one", blocks: two, cursor: "198.18.0.200", want: "198.18.1.11", block: 1},
		{name: "wraps around past the last block", blocks: two, cursor: "198.18.1.11", want: "198.18.0.1"},
		{name: "wraps into the part before the cursor", blocks: two, cursor: "198.18.0.2",
			taken: []string{"198.18.0.3", "198.18.1.11"}, want: "198.18.0.1"},
		{name: "a cursor of the other family is ignored", blocks: two, cursor: "fd00::5", want: "198.18.0.1"},
		{name: "exhausted", blocks: two, cursor: "198.18.0.2",
			taken: []string{"198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.1.11"}},
		{name: "no blocks", blocks: nil},
		{name: "a /64 with one address taken is not walked through",
			blocks: []Block{block("fd00::", "fd00::ffff:ffff:ffff:ffff")}, cursor: "fd00::ffff:ffff:ffff:fffe",
			taken: []string{"fd00::ffff:ffff:ffff:ffff"}, want: "fd00::"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			taken := map[netip.Addr]bool{}
			for _, ip := range tc.taken {
				taken[netip.MustParseAddr(ip)] = true
			}
			p := Pool{Blocks: tc.blocks, IsTaken: func(ip netip.Addr) bool { return taken[ip] }, Taken: len(taken)}
			if tc.cursor != "" {
				p.Cursor = netip.MustParseAddr(tc.cursor)
			}
			ip, i, ok := Pick(p)
			switch {
			case tc.want == "" && ok:
				t.Fatalf("Pick = %s in block %d; want exhausted", ip, i)
			case tc.want == "":
			case !ok || ip.String() != tc.want || i != tc.block:
				t.Fatalf("Pick = %s in block %d, %v; want %s in block %d", ip, i, ok, tc.want, tc.block)
			}
		})
	}
}

// An exhausted /64 answers after a number of steps bounded by what is
// taken and excluded, never by the block's size.
func TestPickBoundsTheWalkByWhatIsTaken(t *testing.T) {
	steps := 0
	p := Pool{Blocks: []Block{block("fd00::", "fd00::ffff:ffff:ffff:ffff", "fd00::1")}, Taken: 3,
		IsTaken: func(netip.Addr) bool { steps++; return true }}
	if ip, _, ok := Pick(p); ok {
		t.Fatalf("Pick = %s; want exhausted", ip)
	}
	if steps != 5 { // fd00:: to fd00::5: the limit of 3 taken + 1 excluded + 1 steps, the excluded one never asked about
		t.Fatalf("asked IsTaken %d times; want 5", steps)
	}
}
