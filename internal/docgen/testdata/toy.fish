# fish completion for toy, generated from its command-line model.
complete -c toy -f
complete -c toy -n 'not __fish_seen_subcommand_from gen fleet' -a 'gen' -d 'Generate things'
complete -c toy -n 'not __fish_seen_subcommand_from gen fleet' -a 'fleet' -d 'Work on many nodes'
complete -c toy -l help -s h -d 'Show context-sensitive help'
complete -c toy -l root -x -a '(__fish_complete_directories)' -d 'Read files under DIR'
complete -c toy -l verbose -s v -d 'Say more'
complete -c toy -n '__fish_seen_subcommand_from gen' -l style -x -a 'plain fancy' -d 'Output style: plain,fancy'
complete -c toy -n '__fish_seen_subcommand_from gen' -l output -s o -r -F -d 'Write FILE [atomically]: it\'s \'safe\''
complete -c toy -n '__fish_seen_subcommand_from gen' -l map -x -d 'Rename NAME (repeatable)'
complete -c toy -n '__fish_seen_subcommand_from gen' -l color -d 'Colour the output'
complete -c toy -n '__fish_seen_subcommand_from gen' -l no-color -d 'Colour the output'
complete -c toy -n '__fish_seen_subcommand_from fleet; and not __fish_seen_subcommand_from merge' -a 'merge' -d 'Merge nodes'
complete -c toy -n '__fish_seen_subcommand_from fleet; and __fish_seen_subcommand_from merge' -F
complete -c toy -n '__fish_seen_subcommand_from fleet; and __fish_seen_subcommand_from merge' -l name -x -d 'Cluster name'
