// Graph traversal: a folder tree with typed edges, a breadth-first walker, node abilities,
// skip/disengage, and spawning at a node.
//
//   POST /walker/MakeTree                 {}                 builds /, /docs, /docs/api, /src
//   POST /walker/Find                     {"name": "api"}    walks the tree until it finds the folder
//   POST /walker/Sizes                    {}                 every folder with its depth, skipping hidden ones
//   POST /walker/Children/<folder id>     {}                 spawned at a folder: its direct children
import { Edge, entry, exit, Node, Root, T, Walker } from 'svc';

export class Folder extends Node {
  static has = T.Object({ name: T.String(), hidden: T.Boolean({ default: false }), files: T.Integer({ default: 0 }) });
  declare name: string;
  declare hidden: boolean;
  declare files: number;

  /** A node ability: runs when a Sizes walker arrives here (`this` is the folder). */
  @entry(() => Sizes) count(walker: Sizes) {
    walker.total += this.files;
  }
}

/** A typed edge with a field: parent → child. */
export class Contains extends Edge {
  static has = T.Object({ position: T.Integer({ default: 0 }) });
  declare position: number;
}

export class MakeTree extends Walker {
  @entry(Root) async make(here: Root) {
    const top = await here.connect(new Folder({ name: '/', files: 1 }));
    const docs = await top.connect(new Folder({ name: 'docs', files: 3 }), new Contains({ position: 0 }));
    await docs.connect(new Folder({ name: 'api', files: 5 }), new Contains({ position: 0 }));
    await top.connect(new Folder({ name: 'src', files: 7 }), new Contains({ position: 1 }));
    await top.connect(new Folder({ name: '.cache', hidden: true, files: 100 }), new Contains({ position: 2 }));
    this.report(top);
  }
}

/** Breadth first from the top folder; stops the whole walk at the first match. */
export class Find extends Walker {
  static has = T.Object({ name: T.String() });
  declare name: string;

  @entry(Root) async start(here: Root) {
    this.visit(await here.out(Folder));
  }

  @entry(Folder) async look(here: Folder) {
    if (here.name === this.name) {
      this.report(here);
      this.disengage(); // nothing after this runs; reports so far are kept
    }
    this.visit(await here.out(Contains)); // follow Contains edges only
  }
}

/** Every visible folder with its depth; the node ability adds up files. */
export class Sizes extends Walker {
  static has = T.Object({ total: T.Integer({ default: 0 }) });
  declare total: number;
  private depth = new Map<string, number>();

  @entry(Root) async start(here: Root) {
    for (const top of await here.out(Folder)) {
      this.depth.set(top.id, 0);
      this.visit(top);
    }
  }

  @entry(Folder) async walk(here: Folder) {
    if (here.hidden) this.skip(); // leave this node now: no report, no children, no exit ability
    const depth = this.depth.get(here.id) ?? 0;
    this.report({ name: here.name, depth });
    for (const child of await here.out(Contains)) {
      if (this.depth.has(child.id)) continue; // the graph does not remember visits
      this.depth.set(child.id, depth + 1);
      this.visit(child);
    }
  }

  /** Walker exit abilities run after the node's abilities: the folder's files are counted by now. */
  @exit(Folder) after(here: Folder) {
    if (here.name === '/') this.report({ filesSoFar: this.total });
  }
}

/** Spawned at a folder: POST /walker/Children/<id>. `@entry(Root)` would not run here. */
export class Children extends Walker {
  @entry(Folder) async list(here: Folder) {
    const edges = await here.outEdges(Contains);
    const kids = await here.out(Contains);
    this.report(
      edges
        .map((e) => ({ position: e.position, name: (kids.find((k) => k.id === e.targetId) as Folder | undefined)?.name }))
        .sort((a, b) => a.position - b.position),
    );
  }
}
