package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/libevm/crypto"

	"github.com/permafrost-dev/permafrost/internal/api/apitest"
	"github.com/permafrost-dev/permafrost/internal/chains"
	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
	"github.com/permafrost-dev/permafrost/internal/testenv"
)

func TestMain(m *testing.M) {
	// Re-executed as the indexing and delivering child of TestCrashDelivery.
	if args := os.Getenv(crashChildEnv); args != "" {
		if err := crashChild(args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	storetest.Main(m)
}

// Topics of the transfer events (ERC-20/721 Transfer, ERC-1155 TransferSingle and TransferBatch).
var (
	topicTransfer       = crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)")).Hex()
	topicTransferSingle = crypto.Keccak256Hash([]byte("TransferSingle(address,address,address,uint256,uint256)")).Hex()
	topicTransferBatch  = crypto.Keccak256Hash([]byte("TransferBatch(address,address,address,uint256[],uint256[])")).Hex()
)

// recordedBlock is what the recorded node answered for one C-chain block.
type recordedBlock struct {
	Number       string `json:"number"`
	Transactions []struct {
		Hash string  `json:"hash"`
		From string  `json:"from"`
		To   *string `json:"to"`
	} `json:"transactions"`
	receipts []recordedReceipt
}

type recordedReceipt struct {
	TransactionHash string  `json:"transactionHash"`
	ContractAddress *string `json:"contractAddress"`
	Logs            []struct {
		Topics []string `json:"topics"`
	} `json:"logs"`
}

// recordedCChain reads every C-chain block (full txs) and its receipts from
// the recording's eth_getBlockByNumber and eth_getBlockReceipts answers.
func recordedCChain(t *testing.T) map[uint64]*recordedBlock {
	t.Helper()
	return recordedCChainOf(t, devnet.LoadRPC(t, devnet.CRPC))
}

// recordedCChainOf reads the blocks and receipts of a recording's calls.
func recordedCChainOf(t *testing.T, calls devnet.Calls) map[uint64]*recordedBlock {
	t.Helper()
	blocks := map[uint64]*recordedBlock{}
	receipts := map[string][]recordedReceipt{}
	for _, c := range calls {
		if c.Response.Result == nil || string(c.Response.Result) == "null" {
			continue
		}
		var params []json.RawMessage
		_ = json.Unmarshal(c.Params, &params)
		switch c.Method {
		case "eth_getBlockByNumber":
			if len(params) < 2 || string(params[1]) != "true" {
				continue
			}
			var b recordedBlock
			if err := json.Unmarshal(c.Response.Result, &b); err != nil {
				t.Fatal(err)
			}
			n, _ := strconv.ParseUint(strings.TrimPrefix(b.Number, "0x"), 16, 64)
			blocks[n] = &b
		case "eth_getBlockReceipts":
			var rs []recordedReceipt
			if err := json.Unmarshal(c.Response.Result, &rs); err != nil {
				t.Fatal(err)
			}
			var p string
			_ = json.Unmarshal(params[0], &p)
			receipts[p] = rs
		}
	}
	for n, b := range blocks {
		b.receipts = receipts[b.Number]
		if b.receipts == nil {
			b.receipts = receipts[fmt.Sprintf("0x%x", n)]
		}
		if len(b.receipts) != len(b.Transactions) {
			t.Fatalf("recording: block %d has %d txs and %d receipts", n, len(b.Transactions), len(b.receipts))
		}
	}
	if len(blocks) < 30 {
		t.Fatalf("recording: %d C-chain blocks", len(blocks))
	}
	return blocks
}

// parties are the addresses a recorded tx touches: sender, recipient,
// created contract, and both parties of every token transfer its logs show.
func parties(b *recordedBlock, i int) []string {
	tx, r := b.Transactions[i], b.receipts[i]
	out := []string{strings.ToLower(tx.From)}
	if tx.To != nil {
		out = append(out, strings.ToLower(*tx.To))
	}
	if r.ContractAddress != nil {
		out = append(out, strings.ToLower(*r.ContractAddress))
	}
	word := func(s string) string { return "0x" + strings.ToLower(s[len(s)-40:]) }
	for _, l := range r.Logs {
		switch {
		case len(l.Topics) >= 3 && l.Topics[0] == topicTransfer:
			out = append(out, word(l.Topics[1]), word(l.Topics[2]))
		case len(l.Topics) == 4 && (l.Topics[0] == topicTransferSingle || l.Topics[0] == topicTransferBatch):
			out = append(out, word(l.Topics[2]), word(l.Topics[3]))
		}
	}
	return out
}

type event struct {
	hook   string
	height uint64
	tx     int
}

// TestEVMAddressActivity ingests devnet-a with address_activity webhooks
// registered first, and compares the outbox with the events the recorded
// blocks imply: one per (webhook, tx touching a watched address), none
// missing, none extra; each payload valid against the published schema and
// naming the recorded tx. A reindex then writes no new event and leaves
// delivered ones delivered.
func TestEVMAddressActivity(t *testing.T) {
	blocks := recordedCChain(t)
	oapi := apitest.Load(t)
	watch := watchLists(t, blocks)
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			db, set, hooks := ingestWithHooks(t, ctx, backend, watch, "https://hooks.example.com/")

			want := expected(blocks, watch, hooks)
			got := readOutbox(t, ctx, db)
			for ev := range want {
				if _, ok := got[ev]; !ok {
					t.Errorf("missing event: webhook %s block %d tx %d", hooks[ev.hook], ev.height, ev.tx)
				}
			}
			for ev := range got {
				if !want[ev] {
					t.Errorf("extra event: webhook %s block %d tx %d", hooks[ev.hook], ev.height, ev.tx)
				}
			}
			if len(want) < 10 {
				t.Errorf("only %d events expected: the watched addresses do not exercise the emitter", len(want))
			}
			ids := map[string]bool{}
			for ev, row := range got {
				if err := oapi.CheckSchema("WebhookAddressActivityResponse", []byte(row.payload)); err != nil {
					t.Errorf("block %d tx %d: %v", ev.height, ev.tx, err)
				}
				var p struct {
					WebhookID, EventType, MessageID string
					Event                           struct {
						Transaction struct{ TxHash, BlockNumber string }
						Logs        *[]json.RawMessage
					}
				}
				if err := json.Unmarshal([]byte(row.payload), &p); err != nil {
					t.Fatal(err)
				}
				b := blocks[ev.height]
				if p.WebhookID != ev.hook || p.MessageID != row.messageID || p.Event.Transaction.TxHash != b.Transactions[ev.tx].Hash ||
					p.Event.Transaction.BlockNumber != strconv.FormatUint(ev.height, 10) {
					t.Errorf("block %d tx %d: payload %s", ev.height, ev.tx, row.payload)
				}
				if logs := p.Event.Logs; (hooks[ev.hook] == "logs") != (logs != nil) || (logs != nil && len(*logs) != len(b.receipts[ev.tx].Logs)) {
					t.Errorf("block %d tx %d: logs %v for webhook %s, recorded %d", ev.height, ev.tx, logs, hooks[ev.hook], len(b.receipts[ev.tx].Logs))
				}
				if ids[row.messageID] {
					t.Errorf("message id %s twice", row.messageID)
				}
				ids[row.messageID] = true
			}

			// Every event delivered: each queue's cursor at its last event.
			if _, err := db.ExecContext(ctx, `UPDATE webhook_queues SET pending = 0,
				delivered_height = (SELECT MAX(block_height) FROM webhook_outbox o WHERE o.webhook_id = webhook_queues.webhook_id),
				delivered_position = (SELECT MAX(position) FROM webhook_outbox o WHERE o.webhook_id = webhook_queues.webhook_id)`); err != nil {
				t.Fatal(err)
			}
			checkReindex(t, ctx, db, set)
		})
	}
}

// checkReindex reindexes the chains: the same events (same ids) are raised
// again, so nothing is written and delivered ones stay delivered.
func checkReindex(t *testing.T, ctx context.Context, db *store.DB, set *chains.Set) {
	t.Helper()
	before := readOutbox(t, ctx, db)
	if err := ingest.Reindex(ctx, db, set.Chains, 0, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	after := readOutbox(t, ctx, db)
	if len(after) != len(before) {
		t.Errorf("after reindex: %d events, before %d", len(after), len(before))
	}
	for ev, row := range after {
		if row.status != before[ev].status || row.messageID != before[ev].messageID {
			t.Errorf("after reindex: block %d position %d: %+v, before %+v", ev.height, ev.tx, row, before[ev])
		}
	}
}

type outboxRow struct{ messageID, payload, status string }

func readOutbox(t *testing.T, ctx context.Context, db *store.DB) map[event]outboxRow {
	t.Helper()
	rows, err := db.QueryContext(ctx, `SELECT o.webhook_id, o.block_height, o.position, o.message_id, o.payload, `+outboxStatus+`
		FROM webhook_outbox o LEFT JOIN webhook_queues q ON q.webhook_id = o.webhook_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[event]outboxRow{}
	for rows.Next() {
		var ev event
		var r outboxRow
		var h int64
		if err := rows.Scan(&ev.hook, &h, &ev.tx, &r.messageID, &r.payload, &r.status); err != nil {
			t.Fatal(err)
		}
		ev.height = uint64(h)
		out[ev] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// ingestWithHooks indexes devnet-a into a fresh database of backend with one
// address_activity webhook per watch list (on the C-chain, named by its key;
// "logs" includes logs), registered before the first block. It returns the
// database, the chains and the webhooks' names by id.
func ingestWithHooks(t *testing.T, ctx context.Context, backend string, watch map[string][]string, urlBase string) (*store.DB, *chains.Set, map[string]string) {
	t.Helper()
	var hooks map[string]string
	db, set := ingestDevnet(t, ctx, backend, func(db *store.DB) { hooks = registerHooks(t, ctx, db, watch, urlBase) })
	return db, set, hooks
}

// ingestDevnet indexes devnet-a into a fresh database of backend after
// register ran on it (before the first block).
func ingestDevnet(t *testing.T, ctx context.Context, backend string, register func(*store.DB)) (*store.DB, *chains.Set) {
	t.Helper()
	db, err := store.Open(ctx, storetest.DSNFor(t, backend))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	register(db)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	set, err := chains.Build(ctx, chains.Options{NodeURL: testenv.ReplayNode(t),
		GenesisPath: filepath.Join(testenv.DevnetDir(t), "genesis.json"), Log: log, BatchSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := ingest.New(db, set.Chains, ingest.Options{UntilTip: true, Discover: set.Discover(db)}, log).Run(ctx); err != nil {
		t.Fatal(err)
	}
	return db, set
}

// watchLists are the addresses the tests' webhooks watch: the workload's two
// most active C-chain addresses, the ERC-20 contract (a recipient of calls),
// and an address that never appears.
func watchLists(t *testing.T, blocks map[uint64]*recordedBlock) map[string][]string {
	count := map[string]int{}
	for _, b := range blocks {
		for i := range b.Transactions {
			for _, a := range parties(b, i) {
				count[a]++
			}
		}
	}
	byCount := slices.SortedFunc(maps.Keys(count), func(a, b string) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return strings.Compare(a, b)
	})
	erc20 := strings.ToLower(devnet.LoadNetwork(t).CChainContracts["erc20"])
	return map[string][]string{
		"logs":   {byCount[0], erc20},
		"plain":  {byCount[1]},
		"silent": {"0x00000000000000000000000000000000000000aa"},
	}
}

// expected are the events the recorded blocks imply for the webhooks.
func expected(blocks map[uint64]*recordedBlock, watch map[string][]string, hooks map[string]string) map[event]bool {
	want := map[event]bool{}
	for id, name := range hooks {
		w := map[string]bool{}
		for _, a := range watch[name] {
			w[a] = true
		}
		for h, b := range blocks {
			for i := range b.Transactions {
				if slices.ContainsFunc(parties(b, i), func(a string) bool { return w[a] }) {
					want[event{id, h, i}] = true
				}
			}
		}
	}
	return want
}
