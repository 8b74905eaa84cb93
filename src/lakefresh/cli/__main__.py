from lakefresh.cli import main

main()
