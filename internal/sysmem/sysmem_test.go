package sysmem

import "testing"

// TestFloats: the arrays have the asked length, are zeroed and writable,
// large (committed) or small.
func TestFloats(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 1<<18 + 3, 1 << 22} {
		z := Floats(n)
		if len(z) != n {
			t.Fatalf("Floats(%d) has length %d", n, len(z))
		}
		for i := range z {
			if z[i] != 0 {
				t.Fatalf("Floats(%d)[%d] = %v", n, i, z[i])
			}
			z[i] = float64(i)
		}
	}
}
