from memvault.cli.app import main

main()
