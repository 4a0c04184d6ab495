// A small todo service: `npm start` serves it.
//
//   POST /walker/AddTodo        {title}          create (public: anonymous todos go to the shared guest graph)
//   POST /walker/ListTodos      {}               list yours (token required)
//   POST /walker/ToggleTodo     {id}             flip done
//   POST /walker/DeleteTodo     {id}             remove
//   GET  /todos/{id}                             one todo by id (a path parameter)
//   POST /function/stats        {}               counts (a function)
//   ws   /ws/Announce           {text}           a live channel: every signed-in client hears each message
import { APIProtocol, entry, fn, HTTPMethod, Node, restspec, Root, T, Walker } from 'svc';

export class Todo extends Node {
  static has = T.Object({
    title: T.String({ minLength: 1, maxLength: 200 }),
    done: T.Boolean({ default: false }),
  });
  declare title: string;
  declare done: boolean;
}

export class AddTodo extends Walker {
  static access = 'pub' as const;
  static has = T.Object({ title: T.String({ minLength: 1, maxLength: 200 }) });
  declare title: string;

  @entry(Root) async add(here: Root) {
    this.report(await here.connect(new Todo({ title: this.title })));
  }
}

export class ListTodos extends Walker {
  @entry(Root) async start(here: Root) {
    this.visit(await here.out(Todo));
  }

  @entry(Todo) each(here: Todo) {
    this.report(here);
  }
}

export class ToggleTodo extends Walker {
  static has = T.Object({ id: T.String() });
  declare id: string;

  @entry(Root) async toggle(here: Root) {
    const [todo] = await here.out(Todo, (t) => t.id === this.id);
    if (!todo) return;
    todo.done = !todo.done;
    this.report(todo);
  }
}

export class DeleteTodo extends Walker {
  static has = T.Object({ id: T.String() });
  declare id: string;

  @entry(Root) async remove(here: Root) {
    const [todo] = await here.out(Todo, (t) => t.id === this.id);
    if (!todo) return;
    await todo.destroy();
    this.report({ deleted: this.id });
  }
}

/** GET /todos/{id}: one todo, found by id in the caller's graph. */
export class GetTodo extends Walker {
  static spec = restspec({ method: HTTPMethod.GET, path: '/todos/{id}' });
  static has = T.Object({ id: T.String() });
  declare id: string;

  @entry(Root) async find(here: Root) {
    const [todo] = await here.out(Todo, (t) => t.id === this.id);
    if (todo) this.report(todo);
  }
}

/** Counts of the caller's todos. */
export const stats = fn({}, async (_args, ctx) => {
  const todos = await ctx.root.out(Todo);
  return { total: todos.length, done: todos.filter((t) => t.done).length };
});

/** A live channel over WebSocket: each message goes to every signed-in client connected to it. */
export class Announce extends Walker {
  static spec = restspec({ protocol: APIProtocol.WEBSOCKET, broadcast: true });
  static has = T.Object({ text: T.String({ minLength: 1, maxLength: 500 }) });
  declare text: string;

  @entry(Root) say() {
    this.report({ from: this.caller.userId ?? null, text: this.text });
  }
}
