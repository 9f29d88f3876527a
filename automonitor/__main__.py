from automonitor.cli import main

main()
