"""Ticks on a timer: cron expressions (``fields``), memento's crontab line (``line``) and
the user's crontab itself (``table``)."""
