// Sharing between users: each user's graph is private; the owner grants others access per node.
//
//   POST /walker/CreateBoard          {"title": "Trip"}                      a board on the caller's graph
//   POST /walker/ShareBoard           {"id": "<board>", "level": "read"}     everyone may read it
//   POST /walker/ShareBoard           {"id": "<board>", "level": "write", "to": "<root id of bob>"}
//   POST /walker/Follow/<board id>    {}                                     bob bookmarks it (needs CONNECT or more)
//   POST /walker/Rename/<board id>    {"title": "…"}                         needs WRITE: otherwise 403
//   POST /walker/MyBoards             {}                                     own boards and followed ones
//
// A root id is what /user/login answers as `root_id`.
import { AccessLevel, allowRoot, entry, Node, permGrant, Root, SvcError, T, Walker } from 'svc';

export class Board extends Node {
  static has = T.Object({ title: T.String({ minLength: 1, maxLength: 200 }), owner: T.String() });
  declare title: string;
  declare owner: string;
}

export class CreateBoard extends Walker {
  static has = T.Object({ title: T.String({ minLength: 1, maxLength: 200 }) });
  declare title: string;

  @entry(Root) async create(here: Root) {
    this.report(await here.connect(new Board({ title: this.title, owner: this.caller.userId ?? 'guest' })));
  }
}

const LEVELS = { read: AccessLevel.READ, connect: AccessLevel.CONNECT, write: AccessLevel.WRITE } as const;

/** Only the owner changes a node's access (anyone else: 403). */
export class ShareBoard extends Walker {
  static has = T.Object({
    id: T.String(),
    level: T.Union([T.Literal('read'), T.Literal('connect'), T.Literal('write')]),
    to: T.Optional(T.String()),
  });
  declare id: string;
  declare level: keyof typeof LEVELS;
  declare to?: string;

  @entry(Root) async share(here: Root) {
    const [board] = await here.out(Board, (b) => b.id === this.id);
    if (!board) throw new SvcError('BOARD_NOT_FOUND', 'no such board of yours', { status: 404 });
    if (this.to) allowRoot(board, this.to, LEVELS[this.level]); // one root
    else permGrant(board, LEVELS[this.level]); // everyone
    this.report({ shared: board.id, level: this.level, with: this.to ?? 'everyone' });
  }
}

/** Spawned at someone's board: connects the caller's root to it (a bookmark). */
export class Follow extends Walker {
  @entry(Board) async follow(here: Board) {
    await this.root.connect(here); // needs CONNECT on the board: 403 with READ only
    this.report(here);
  }
}

/** Spawned at a board: changing its fields needs WRITE (the owner always has it). */
export class Rename extends Walker {
  static has = T.Object({ title: T.String({ minLength: 1, maxLength: 200 }) });
  declare title: string;

  @entry(Board) rename(here: Board) {
    here.title = this.title;
    this.report(here);
  }
}

/** The caller's own boards and the ones they follow (readable ones only: others are left out). */
export class MyBoards extends Walker {
  @entry(Root) async list(here: Root) {
    for (const board of await here.out(Board)) {
      this.report({ id: board.id, title: board.title, mine: board.owner === this.caller.userId });
    }
  }
}
