"""A real SMTP server for the outbound mail tests: aiosmtpd on 127.0.0.1.

Usage: python smtp_sink.py OUT_DIR [--reject-550 ADDR]... [--reject-451 ADDR]... [--reject-sender ADDR]...
       [--reply-delay SECONDS]

Binds a free port and prints `PORT <n>` on stdout once it accepts connections. Every accepted
message is written to OUT_DIR as `<n>.eml` (the bytes exactly as received) and `<n>.json` (the
envelope), the JSON last and by rename, so a reader that sees the JSON sees the whole message.
RCPT TO an address given with --reject-550 / --reject-451 is refused with that code; MAIL FROM an
address given with --reject-sender is refused with 550. With --reply-delay, the final reply to DATA
comes that many seconds after the message is stored (a client killed meanwhile never learns it
was accepted). Runs until killed.
"""

import argparse
import asyncio
import json
import os
import sys

from aiosmtpd.smtp import SMTP


class Handler:
    def __init__(self, out_dir, reject550, reject451, reject_sender, reply_delay=0.0):
        self.out_dir = out_dir
        self.reply_delay = reply_delay
        self.reject550 = {a.lower() for a in reject550}
        self.reject451 = {a.lower() for a in reject451}
        self.reject_sender = {a.lower() for a in reject_sender}
        self.count = 0

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        if address.lower() in self.reject_sender:
            return "550 5.7.1 Sender not allowed"
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower() in self.reject550:
            return "550 5.1.1 No such user here"
        if address.lower() in self.reject451:
            return "451 4.3.0 Mailbox temporarily unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.count += 1
        base = os.path.join(self.out_dir, str(self.count))
        with open(base + ".eml", "wb") as f:
            f.write(envelope.original_content)
        meta = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "mail_options": envelope.mail_options,
            "helo": session.host_name,
            "peer": list(session.peer),
        }
        with open(base + ".json.tmp", "w") as f:
            json.dump(meta, f)
        os.rename(base + ".json.tmp", base + ".json")
        if self.reply_delay:
            await asyncio.sleep(self.reply_delay)
        return "250 2.0.0 OK queued as m%d" % self.count


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("out_dir")
    p.add_argument("--reject-550", action="append", default=[])
    p.add_argument("--reject-451", action="append", default=[])
    p.add_argument("--reject-sender", action="append", default=[])
    p.add_argument("--reply-delay", type=float, default=0.0)
    a = p.parse_args()
    handler = Handler(a.out_dir, a.reject_550, a.reject_451, a.reject_sender, a.reply_delay)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: SMTP(handler, hostname="sink.test", decode_data=False), host="127.0.0.1", port=0
    )
    port = server.sockets[0].getsockname()[1]
    print("PORT %d" % port, flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
