from memento_gh.cli import program

program()
