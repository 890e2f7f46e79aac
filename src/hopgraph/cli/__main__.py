"""``python -m hopgraph.cli``: the ``hopgraph`` command."""

from hopgraph.cli import main

if __name__ == "__main__":
    main()
