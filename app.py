"""DefSent Studio: `python app.py` serves the web app on http://127.0.0.1:7860 (offline).

The Hugging Face Space's app_file. The launcher is app/launch.py, also installed as the
`defsent-studio` command (`pip install -e .`).
"""
import sys

from app.launch import exposure_warnings, main, parse_args  # noqa: F401  (the launcher's face, for tests)

if __name__ == "__main__":
    sys.exit(main())
