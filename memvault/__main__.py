from memvault.cli.entry import main

main()
