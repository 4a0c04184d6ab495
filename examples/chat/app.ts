// A multi-room chat over one WebSocket walker: rooms, presence and history.
//
//   ws   /ws/Chat         {op: 'join', room, name}   join chat:<room>; others see {name} in its presence
//                         {op: 'say', room, text}    a message to everyone in the room (sent once the run commits)
//                         {op: 'leave', room}        leave it
//                         {op: 'who', room}          who is in it (reported)
//   POST /function/announce {room, text}             a message to a room, sent at once; answers how many connections are in it
//
// Every connection also receives: {"type":"message","room","id","data"} frames, {"type":"presence","event":"join"|"leave",…}
// frames for the rooms it is in, and {"type":"joined"|"left","room",…} after its own joins and leaves.
// A connection talks to one walker, so one walker does all four things (an `op` field says which).
import { APIProtocol, entry, fn, presence, restspec, Root, rooms, sendTo, T, Walker } from 'svc';

/** `chat:<name>` rooms: signed-in users only; the last 50 messages of 10 minutes kept; joins and leaves told. */
export const chatRooms = rooms({
  // As narrow as the names the walker makes: a client's own `join` frame is checked against this, not the walker's schema.
  pattern: /^chat:[a-z0-9-]{1,40}$/,
  // Signed-in users only, and no presence name of the client's own choosing longer than the walker allows.
  authorize: (_room, caller, meta) => caller.userId !== undefined && (meta === undefined || (typeof meta.name === 'string' && meta.name.length <= 40 && Object.keys(meta).length === 1)),
  history: { size: 50, ttlSeconds: 600 },
  notify: true,
  maxPerConnection: 10,
});

const RoomName = T.String({ pattern: '^[a-z0-9-]{1,40}$' });

/** The chat walker (private: a token is needed). */
export class Chat extends Walker {
  static spec = restspec({ protocol: APIProtocol.WEBSOCKET });
  static has = T.Object({
    op: T.Union([T.Literal('join'), T.Literal('say'), T.Literal('leave'), T.Literal('who')]),
    room: RoomName,
    name: T.String({ maxLength: 40, default: '' }),
    text: T.String({ maxLength: 2000, default: '' }),
  });
  declare op: 'join' | 'say' | 'leave' | 'who';
  declare room: string;
  declare name: string;
  declare text: string;

  @entry(Root) async act() {
    const room = `chat:${this.room}`;
    const from = this.caller.userId ?? null;
    switch (this.op) {
      case 'join':
        // Applied once the run commits: the client gets {"type":"joined","room","ticket","last"} first, then this reply.
        await this.join(room, { name: this.name || from });
        this.report({ joined: room });
        break;
      case 'say':
        this.sendTo(room, { from, text: this.text, at: new Date().toISOString() });
        this.report({ sent: true });
        break;
      case 'leave':
        this.leave(room);
        this.report({ left: room });
        break;
      case 'who':
        this.report(await presence(room));
        break;
    }
  }
}

/** A message to a room from anywhere (a script, a cron job, another service): sent at once. */
export const announce = fn({ params: T.Object({ room: RoomName, text: T.String({ minLength: 1, maxLength: 2000 }) }) }, async ({ room, text }) => {
  sendTo(`chat:${room}`, { from: null, announcement: true, text });
  return { connections: (await presence(`chat:${room}`)).connections };
});
