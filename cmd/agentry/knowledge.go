package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/agentryhq/agentry/agentos/config"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/vectordb"
)

type knowledgeFlags struct {
	dsn, configFile, dataDir, user string
}

func newKnowledgeCmd() *cobra.Command {
	var f knowledgeFlags
	cmd := &cobra.Command{
		Use:   "knowledge",
		Short: "Insert documents into the knowledge base and search it",
		Long: `Insert documents (files, directories' files, URLs) into the knowledge base the
server serves under /knowledge, and search it. Without a knowledge: section in
--config, the offline defaults are used: the local hashing embedder (matches
words, not meaning) and the embedded vector store under --data-dir/knowledge.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.dsn, "db", config.DefaultDSN, dbFlagHelp)
	pf.StringVar(&f.configFile, "config", "", "YAML config whose knowledge: section to use")
	pf.StringVar(&f.dataDir, "data-dir", defaultDataDir, "directory of the embedded vector store")
	pf.StringVar(&f.user, "user", "", "owner of inserted content and scope of searches (default: shared content, as an admin)")
	cmd.AddCommand(newKnowledgeInsertCmd(&f), newKnowledgeSearchCmd(&f))
	return cmd
}

// openKB opens the database and the knowledge base; the logger writes the
// defaults notice once, to stderr.
func openKB(cmd *cobra.Command, f *knowledgeFlags) (*knowledge.Knowledge, func(), error) {
	ctx := cmd.Context()
	file, err := config.Load(f.configFile, nil)
	if err != nil {
		return nil, nil, err
	}
	if cmd.Flags().Changed("db") || file.DB.DSN == "" {
		file.DB.DSN = f.dsn
	}
	if err := file.Knowledge.Validate(); err != nil {
		return nil, nil, err
	}
	store, err := openStore(ctx, file.DB.DSN, storeOptions(file))
	if err != nil {
		return nil, nil, err
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	kb, closeKB, err := config.OpenKnowledge(ctx, file.Knowledge, store, f.dataDir, log)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return kb, func() {
		if err := closeKB(); err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "closing the vector store:", err)
		}
		store.Close()
	}, nil
}

func newKnowledgeInsertCmd(f *knowledgeFlags) *cobra.Command {
	var name, description string
	cmd := &cobra.Command{
		Use:   "insert PATH|URL...",
		Short: "Insert files, directories (their files) and URLs",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kb, done, err := openKB(cmd, f)
			if err != nil {
				return err
			}
			defer done()
			contents, err := contentsOf(args, name, description)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if f.user != "" {
				ctx = db.WithUserScope(ctx, f.user)
			}
			return insertWithProgress(cmd, kb, ctx, contents)
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "name of the document (one document only; default its file name or URL)")
	cmd.Flags().StringVar(&description, "description", "", "description of the documents")
	return cmd
}

func contentsOf(args []string, name, description string) ([]knowledge.Content, error) {
	var out []knowledge.Content
	for _, a := range args {
		if strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "https://") {
			out = append(out, knowledge.Content{URL: a, Name: name, Description: description})
			continue
		}
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, knowledge.Content{Path: a, Name: name, Description: description})
			continue
		}
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
				out = append(out, knowledge.Content{Path: a + string(os.PathSeparator) + e.Name(), Description: description})
			}
		}
	}
	if len(out) > 1 && name != "" {
		return nil, errors.New("--name names one document; insert several without it")
	}
	return out, nil
}

func insertWithProgress(cmd *cobra.Command, kb *knowledge.Knowledge, ctx context.Context, contents []knowledge.Content) error {
	out := cmd.OutOrStdout()
	bar := progressbar.NewOptions(len(contents), progressbar.OptionSetWriter(cmd.ErrOrStderr()), progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(), progressbar.OptionSetDescription("files"), progressbar.OptionClearOnFinish())
	var lines []string
	done, failed, skipped, chunks := 0, 0, 0, 0
	_, err := kb.InsertMany(ctx, contents, func(p knowledge.Progress) {
		switch {
		case p.Done:
			bar.Add(1)
			switch {
			case p.Err != nil:
				failed++
				lines = append(lines, fmt.Sprintf("FAILED     %s: %v", p.Name, p.Err))
			case p.Skipped:
				skipped++
				lines = append(lines, fmt.Sprintf("unchanged  %s", p.Name))
			default:
				done++
				chunks += p.Chunks
				lines = append(lines, fmt.Sprintf("completed  %s (%d chunks)", p.Name, p.Chunks))
			}
		default:
			bar.Describe(fmt.Sprintf("%s: %d/%d chunks embedded", p.Name, p.Embedded, p.Chunks))
		}
	})
	bar.Finish()
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
	fmt.Fprintf(out, "%d inserted (%d chunks), %d unchanged, %d failed\n", done, chunks, skipped, failed)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			// stopped (Ctrl-C): the rest were not tried, not failed
			return fmt.Errorf("interrupted: %d of %d documents not tried (%d failed): %w",
				len(contents)-done-skipped-failed, len(contents), failed, cerr)
		}
		return fmt.Errorf("%d of %d documents failed", failed, len(contents))
	}
	return nil
}

func newKnowledgeSearchCmd(f *knowledgeFlags) *cobra.Command {
	var limit int
	var mode string
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search the knowledge base: top hits with source name and score",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kb, done, err := openKB(cmd, f)
			if err != nil {
				return err
			}
			defer done()
			ctx := cmd.Context()
			if f.user != "" {
				ctx = db.WithUserScope(ctx, f.user)
			}
			docs, err := kb.SearchQuery(ctx, knowledge.Query{Text: args[0], Limit: limit, Mode: vectordb.Mode(mode)})
			if err != nil {
				return err
			}
			printHits(cmd.OutOrStdout(), docs)
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 5, "number of hits")
	cmd.Flags().StringVar(&mode, "search-type", "", "vector, keyword or hybrid (default: the knowledge base's, hybrid)")
	return cmd
}

func printHits(w io.Writer, docs []knowledge.Document) {
	if len(docs) == 0 {
		fmt.Fprintln(w, "no hits")
		return
	}
	for i, d := range docs {
		text := strings.Join(strings.Fields(d.Content), " ")
		if r := []rune(text); len(r) > 160 {
			text = string(r[:160]) + "…"
		}
		fmt.Fprintf(w, "%d. %s  (score %.4f)\n   %s\n", i+1, d.Name, d.Score, text)
	}
}
