"""Readers of external data files. Each returns ``(data, meta)`` with columns renamed to the
project's vocabulary (after pvlib's ``iotools``); a bad file raises :class:`DataFileError`
naming the file and the problem."""
