// A stand-in for a running 0.9 bridge connection: a process whose command line names
// oh-hai, which (in "stream" mode) holds its session at the Hub the way 0.9 did — SSE
// connects presenting the 0.9 home — and stops cleanly on SIGTERM, leaving the session open.
// "stubborn" ignores SIGTERM, like a wedged one.
// argv: <hub url> <session id> <home> <stream|idle|stubborn>; the token comes in LEGACY_TOKEN.
const [hubUrl, session, home, mode] = process.argv.slice(2);
process.on('SIGTERM', () => {
  if (mode !== 'stubborn') process.exit(0);
});

if (mode === 'idle' || mode === 'stubborn') {
  process.stdout.write('ready\n');
  setInterval(() => undefined, 60_000);
} else {
  let announced = false;
  for (;;) {
    try {
      const res = await fetch(`${hubUrl}/v1/inbox/stream?session=${encodeURIComponent(session)}`, {
        headers: {
          authorization: `Bearer ${process.env.LEGACY_TOKEN}`,
          accept: 'text/event-stream',
          'ma2h-consumer': `home=${home}; host=legacy-host; pid=${process.pid}`,
        },
      });
      if (res.status !== 200) {
        process.stderr.write(`stream refused: ${res.status} ${await res.text()}\n`);
        process.exit(3);
      }
      if (!announced) {
        announced = true;
        process.stdout.write('ready\n');
      }
      for await (const _chunk of res.body) {
        // held until the Hub's hold bound ends the stream; then reconnect, as 0.9 did
      }
    } catch (e) {
      process.stderr.write(`stream failed: ${e.message}\n`);
    }
  }
}
