from memento_gh.cli import main

raise SystemExit(main())
