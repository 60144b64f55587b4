from .cli import main

if __name__ == "__main__":  # also imported, without running, by worker processes and doctest collection
    raise SystemExit(main())
