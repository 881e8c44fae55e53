package cli

import (
	"fmt"
	"os"

	"github.com/gpc-mc/gpc/core"
)

// vecEnvErr is the error of the environment variable GPC_VEC, read when the
// process starts: it forces the path of core's vector kernels (avx512,
// avx2 or generic; core.SetVecPath), and naming a path this CPU or build
// does not have is a usage error of every tool.
var vecEnvErr = func() error {
	if v := os.Getenv("GPC_VEC"); v != "" {
		if err := core.SetVecPath(v); err != nil {
			return fmt.Errorf("GPC_VEC=%s: %w", v, err)
		}
	}
	return nil
}()
