package xchain

import (
	"testing"

	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }
