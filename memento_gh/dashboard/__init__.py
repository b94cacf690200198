"""``memento dashboard``: a local web page that shows the plan and steers it.

A pure core (``cron``, ``markup``, ``snapshot``, ``writes``) turns file texts and requests into
values; ``repo`` reads the files and git; ``server`` is the only importer of Starlette and
uvicorn. Every write goes through ``memento_gh.controls.apply_control``, under the repository
lock, like the CLI's controls.
"""
