from pyoxide.cli import main

main()
