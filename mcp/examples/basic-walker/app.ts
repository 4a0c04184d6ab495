// A basic walker: one node type, a public walker that writes, a private walker that reads.
//
//   POST /walker/Greet        {"name": "Ada"}   public: stores a Greeting and reports it
//   POST /walker/Greetings    {}                private (token): lists the caller's greetings
import { entry, Node, Root, T, Walker } from 'svc';

/** What is stored: one greeting per call, connected to the caller's root. */
export class Greeting extends Node {
  static has = T.Object({
    name: T.String({ minLength: 1, maxLength: 100 }),
    text: T.String(),
  });
  declare name: string;
  declare text: string;
}

/** Public: without a token it runs on the shared guest graph, with one on the user's own graph. */
export class Greet extends Walker {
  static access = 'pub' as const;
  static has = T.Object({ name: T.String({ minLength: 1, maxLength: 100 }) });
  declare name: string;

  @entry(Root) async greet(here: Root) {
    const greeting = await here.connect(new Greeting({ name: this.name, text: `Hello, ${this.name}!` }));
    this.report(greeting); // → {id, type: "Greeting", context: {name, text}}
  }
}

/** Private (the default): visits every greeting of the caller's root and reports it. */
export class Greetings extends Walker {
  @entry(Root) async start(here: Root) {
    this.visit(await here.out(Greeting));
  }

  @entry(Greeting) each(here: Greeting) {
    this.report(here);
  }
}
