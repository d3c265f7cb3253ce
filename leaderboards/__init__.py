"""Leaderboards: run directories -> validated runs -> boards -> static HTML/Markdown reports.

Modules, in data-flow order: ``runs`` (load and validate run dirs and submissions), ``boards``
(group comparable rows), ``reference`` (numbers reported in papers), ``compare`` (paired tests),
``tables`` / ``formatting`` / ``svg`` (layout), ``render_html`` / ``render_md``, ``report`` (build
and write), ``cli`` (``seed-gym leaderboard build`` and ``seed-gym compare``). See ``SUBMITTING.md``.
"""
