"""What oxide-abi defines, read in Python: its generated tables (abi.py), the manifest a
build writes (reader.py, with the launch policies, shapes, records, constants and file
rules it is made of), and the environment variables pyoxide reads (knobs.py). The lowest
room: it imports nothing else of pyoxide but the errors, and no NumPy."""
