"""SMTP mail catcher: every mail received on 0.0.0.0:1025 is written to MAIL_DIR as
`<nanoseconds since the epoch>.eml` (so the greatest name is the newest mail), never relayed.

    catcher.py            serve (MAIL_DIR defaults to /var/mail/catcher)
    catcher.py --check    exit 0 when the server answers SMTP on 127.0.0.1:1025 (health check)
"""
import asyncio
import os
import signal
import smtplib
import sys
import time

MAIL_DIR = os.environ.get("MAIL_DIR", "/var/mail/catcher")
PORT = int(os.environ.get("SMTP_PORT", "1025"))


class Catcher:
    async def handle_DATA(self, server, session, envelope):
        name = "%020d.eml" % time.time_ns()
        tmp = os.path.join(MAIL_DIR, "." + name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(envelope.original_content or envelope.content)
        os.replace(tmp, os.path.join(MAIL_DIR, name))  # readers never see half a mail
        print("caught mail for %d recipient(s): %s" % (len(envelope.rcpt_tos), name), flush=True)
        return "250 OK"


def check():
    try:
        with smtplib.SMTP("127.0.0.1", PORT, timeout=3) as smtp:
            code, _ = smtp.noop()
        return 0 if code == 250 else 1
    except OSError as error:
        print(error, file=sys.stderr)
        return 1


def serve():
    from aiosmtpd.controller import Controller

    os.makedirs(MAIL_DIR, exist_ok=True)
    # PID 1 in its container: without a handler SIGTERM would be ignored until SIGKILL.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    controller = Controller(Catcher(), hostname="0.0.0.0", port=PORT)
    controller.start()
    print("mail catcher on port %d, writing to %s" % (PORT, MAIL_DIR), flush=True)
    try:
        asyncio.new_event_loop().run_forever()
    finally:
        controller.stop()


if __name__ == "__main__":
    sys.exit(check() if sys.argv[1:] == ["--check"] else serve())
