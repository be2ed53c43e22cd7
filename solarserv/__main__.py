from solarserv.cli import main

raise SystemExit(main())
