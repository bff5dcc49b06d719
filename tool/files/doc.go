// Package files owns the files toolkit (Agno's FileTools: save_file,
// read_file, read_file_chunk, list_files, search_files, search_content),
// confined to one root directory by os.Root: no absolute paths, no "..", no
// symlink leading out; every read, write, listing and search is capped, and
// listings and searches skip Agno's excluded paths (.git, node_modules, .env).
package files
